package traffic

import (
	"bufio"
	"container/heap"
	"context"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/simulate"
)

// Input formats of a request log (ImportOptions.Format).
const (
	// FormatCSV is comma-separated values with a header row naming the columns (RFC 4180 quoting).
	FormatCSV = "csv"
	// FormatJSONL is one JSON object per line; the time is a string or a number under its key.
	FormatJSONL = "jsonl"
)

// Limits of an import.
const (
	// MaxScale is the largest ImportOptions.Scale and TimeScale.
	MaxScale = 1000
	// DefaultRunSize is how many timestamps an import sorts in memory before it spills them to a temporary
	// file: 8 MiB of them.
	DefaultRunSize = 1 << 20
	// maxBadExamples is how many bad rows an import keeps to show; it stops at this many unless SkipBad.
	maxBadExamples = 10
	// maxLineBytes bounds one line of a JSONL log.
	maxLineBytes = 1 << 20
)

// ImportOptions say how to read a request log.
type ImportOptions struct {
	// Name names the log in messages and in the trace's comments (its file name).
	Name string
	// Format is FormatCSV or FormatJSONL.
	Format string
	// TimeColumn is the column (CSV header) or key (JSONL) holding each request's time.
	TimeColumn string
	// TimeFormat is one of TimeFormats ("" is TimeAuto).
	TimeFormat string
	// SkipBad skips rows whose time is missing or unreadable, counting them, instead of refusing the log.
	SkipBad bool
	// Scale multiplies the rate (0 is 1): each request stands for Scale requests. Above 1, request i's copies
	// are spread evenly between its time and the next request's; below 1, requests are kept evenly (every
	// second one at 0.5). The count written is floor(Scale × requests read).
	Scale float64
	// TimeScale compresses time (0 is 1): every offset from the first request is divided by TimeScale, so 2
	// plays an hour of the log in 30 minutes at twice the rate. The start time stays the first request's.
	TimeScale float64
	// TempDir holds the sorted runs while importing (a directory on disk, not memory: the output's
	// directory, say). "" is os.TempDir().
	TempDir string
	// RunSize is how many timestamps are sorted in memory at once (0 is DefaultRunSize).
	RunSize int
}

// BadRow is a row an import could not read a time from.
type BadRow struct {
	// Row is the data row's number, from 1 (CSV: the row after the header is 1; JSONL: non-blank lines).
	Row int64 `json:"row"`
	// Line is its line in the file, from 1.
	Line int64 `json:"line"`
	// Column is the time column's name.
	Column string `json:"column"`
	// Value is what the column held (shortened).
	Value string `json:"value"`
	// Reason says what is wrong with it.
	Reason string `json:"reason"`
}

func (b BadRow) String() string {
	return fmt.Sprintf("row %d (line %d), column %q: %q: %s", b.Row, b.Line, b.Column, b.Value, b.Reason)
}

// BadRowsError refuses a log with bad rows (without SkipBad): the first of them, each with its row, line and
// column.
type BadRowsError struct {
	Name string
	Rows []BadRow
	// More says reading stopped after Rows: there may be more.
	More bool
}

func (e *BadRowsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d bad row(s)", e.Name, len(e.Rows))
	if e.More {
		b.WriteString(" (reading stopped there)")
	}
	for _, r := range e.Rows {
		b.WriteString("\n  " + r.String())
	}
	b.WriteString("\nfix them, give the right --time-format, or pass --skip-bad to skip and count them")
	return b.String()
}

// MissingColumnError says the log has no column (or key) of the time column's name, naming those it has.
type MissingColumnError struct {
	Name, Column string
	// Present are the columns of the header (CSV) or the keys of the first object (JSONL).
	Present []string
}

func (e *MissingColumnError) Error() string {
	s := fmt.Sprintf("%s has no column %q; its columns are: %s", e.Name, e.Column, strings.Join(quoteAll(e.Present), ", "))
	for _, p := range e.Present {
		if strings.EqualFold(p, e.Column) {
			return s + fmt.Sprintf(" (did you mean %q? names are case-sensitive)", p)
		}
	}
	return s
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// ImportResult is what an import read and wrote.
type ImportResult struct {
	// Name is the log's name in messages and in the trace's comments (ImportOptions.Name).
	Name string
	// Rows are the data rows read, Skipped those skipped as bad (SkipBad), Bad the first of them.
	Rows, Skipped int64
	Bad           []BadRow
	// Requests is the number of requests written (after Scale).
	Requests int64
	// TimeFormat is the format used (the one detected, for TimeAuto).
	TimeFormat string
	// First and Last are the earliest and the latest request of the log (before TimeScale).
	First, Last time.Time
	// Sorted says the log was already in time order.
	Sorted bool
	// Runs is how many sorted runs were spilled to TempDir (0: the log was sorted in memory).
	Runs int
}

// ImportFile imports the log at input ("-": stdin) into a request trace written atomically at output (its
// directory created when missing, the sorted runs kept there), nothing written on an error. The options'
// Name is the input's ("stdin" for -) and its TempDir the output's directory.
func ImportFile(ctx context.Context, input string, stdin io.Reader, output string, o ImportOptions) (ImportResult, error) {
	var in io.Reader = stdin
	o.Name = "stdin"
	if input != "-" {
		f, err := os.Open(input)
		if err != nil {
			return ImportResult{}, fmt.Errorf("%s: %w", input, err)
		}
		defer f.Close()
		in, o.Name = f, input
	}
	o.TempDir = filepath.Dir(output)
	if err := os.MkdirAll(o.TempDir, 0o755); err != nil {
		return ImportResult{}, fmt.Errorf("--output %s: %w", output, err)
	}
	out, err := atomicfile.Create(output, 0o644)
	if err != nil {
		return ImportResult{}, fmt.Errorf("--output %s: %w", output, err)
	}
	defer out.Discard()
	res, err := Import(ctx, in, out, o)
	if err != nil {
		return res, err
	}
	if err := out.Commit(); err != nil {
		return res, fmt.Errorf("--output %s: %w", output, err)
	}
	return res, nil
}

// WriteSummary says for people what an import of the log (its time in column, the rate multiplied by scale
// and time compressed by timeScale) read and wrote: the requests, the rows read and skipped, the order, the
// span and each bad row kept.
func (r ImportResult) WriteSummary(w io.Writer, column string, scale, timeScale float64) {
	fmt.Fprintf(w, "imported %d requests from %s (column %q, time format %s", r.Requests, r.Name, column, r.TimeFormat)
	if r.TimeFormat == TimeSQL {
		fmt.Fprint(w, ": a time without a zone is UTC")
	}
	fmt.Fprintln(w, ")")
	order := "already in time order"
	if !r.Sorted {
		order = "sorted: the log was out of time order"
	}
	fmt.Fprintf(w, "  %d rows read, %d skipped as bad; %s\n", r.Rows, r.Skipped, order)
	fmt.Fprintf(w, "  first request %s, last %s: the trace lasts %s\n", r.First.Format(time.RFC3339Nano), r.Last.Format(time.RFC3339Nano), r.Duration(timeScale))
	if scale != 1 || timeScale != 1 {
		fmt.Fprintf(w, "  scale %s (rate), time scale %s (time compressed)\n", strconv.FormatFloat(scale, 'g', -1, 64), strconv.FormatFloat(timeScale, 'g', -1, 64))
	}
	for _, b := range r.Bad {
		fmt.Fprintf(w, "  skipped %s\n", b)
	}
	if int64(len(r.Bad)) < r.Skipped {
		fmt.Fprintf(w, "  (and %d more skipped)\n", r.Skipped-int64(len(r.Bad)))
	}
}

// Duration is how long the trace written lasts: the log's span divided by the time scale, to the end of the
// last request's second.
func (r ImportResult) Duration(timeScale float64) time.Duration {
	if timeScale == 0 {
		timeScale = 1
	}
	span := time.Duration(float64(r.Last.Sub(r.First)) / timeScale)
	return span.Truncate(time.Second) + time.Second
}

// Validate checks the options, each problem naming the option.
func (o ImportOptions) Validate() []error {
	var errs []error
	if o.Format != FormatCSV && o.Format != FormatJSONL {
		errs = append(errs, fmt.Errorf("format %q: want %s or %s", o.Format, FormatCSV, FormatJSONL))
	}
	if o.TimeColumn == "" {
		errs = append(errs, errors.New("time-column: give the column (or JSON key) that holds each request's time"))
	}
	if o.TimeFormat != "" && !slices.Contains(TimeFormats, o.TimeFormat) {
		errs = append(errs, fmt.Errorf("time-format %q: want one of %s", o.TimeFormat, strings.Join(TimeFormats, ", ")))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"scale", o.Scale}, {"time-scale", o.TimeScale}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > MaxScale {
			errs = append(errs, fmt.Errorf("%s %g: want a factor in (0, %d]", f.name, f.v, MaxScale))
		}
	}
	if o.RunSize < 0 {
		errs = append(errs, fmt.Errorf("run size %d: want 0 (the default) or more", o.RunSize))
	}
	return errs
}

// Import reads a request log from r and writes its request trace (simulate.RequestTraceMagic's format) to w:
// every request's time, sorted, as seconds since the first. Memory stays bounded whatever the log's size:
// times are sorted in runs of RunSize, each run spilled to a temporary file in TempDir, and the runs merged
// as the trace is written. A log with bad rows is refused (*BadRowsError) unless SkipBad; a log without the
// time column is refused (*MissingColumnError). ctx stops it between rows.
func Import(ctx context.Context, r io.Reader, w io.Writer, o ImportOptions) (ImportResult, error) {
	if errs := o.Validate(); len(errs) > 0 {
		return ImportResult{}, errors.Join(errs...)
	}
	if o.TimeFormat == "" {
		o.TimeFormat = TimeAuto
	}
	if o.Scale == 0 {
		o.Scale = 1
	}
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	if o.RunSize == 0 {
		o.RunSize = DefaultRunSize
	}
	s := &sorter{runSize: o.RunSize, dir: o.TempDir}
	defer s.cleanup()
	res, err := readLog(ctx, r, o, s.add)
	if err != nil {
		return res, err
	}
	if res.Rows-res.Skipped == 0 {
		return res, fmt.Errorf("%s: no request with a time: the log has %d data row(s), %d skipped as bad", o.Name, res.Rows, res.Skipped)
	}
	res.Sorted = s.sorted
	first, last := time.Unix(0, s.min).UTC(), time.Unix(0, s.max).UTC()
	res.First, res.Last = first, last
	if span := time.Duration(float64(last.Sub(first)) / o.TimeScale); span >= simulate.MaxTraceDuration {
		return res, fmt.Errorf("%s: the requests span %s (from %s to %s, time scale %g): a trace lasts less than %s: cut the log or compress it with --time-scale",
			o.Name, span.Round(time.Second), first.Format(time.RFC3339), last.Format(time.RFC3339), o.TimeScale, simulate.MaxTraceDuration)
	}
	next, err := s.merged()
	if err != nil {
		return res, err
	}
	res.Runs = len(s.runs)
	bw := bufio.NewWriterSize(w, 1<<16)
	fmt.Fprintf(bw, "%s\n%s%s\n", simulate.RequestTraceMagic, simulate.RequestTraceStartPrefix, first.Format(time.RFC3339Nano))
	fmt.Fprintf(bw, "# imported from %s, column %q, time format %s%s\n", o.Name, o.TimeColumn, res.TimeFormat, zoneNote(res.TimeFormat))
	fmt.Fprintf(bw, "# %d rows read, %d skipped as bad; scale %g, time scale %g\n", res.Rows, res.Skipped, o.Scale, o.TimeScale)
	fmt.Fprintf(bw, "%s\n", simulate.RequestTraceColumn)
	var (
		buf     []byte
		acc     float64
		written int64
		n       int64
	)
	emit := func(off int64) {
		buf = appendSeconds(buf[:0], off)
		buf = append(buf, '\n')
		bw.Write(buf)
		written++
	}
	scaled := func(t int64) int64 {
		off := t - s.min
		if o.TimeScale != 1 {
			off = int64(math.Round(float64(off) / o.TimeScale))
		}
		return off
	}
	cur, ok, err := next()
	for ok && err == nil {
		if n++; n%65536 == 0 {
			if cerr := ctx.Err(); cerr != nil {
				return res, cerr
			}
		}
		var nxt int64
		var more bool
		nxt, more, err = next()
		if err != nil {
			break
		}
		if o.Scale == 1 {
			emit(scaled(cur))
		} else {
			acc += o.Scale
			copies := int64(math.Floor(acc+1e-9)) - written
			a := scaled(cur)
			gap := int64(0)
			if more {
				gap = scaled(nxt) - a
			}
			for j := range copies {
				emit(a + gap*j/copies)
			}
		}
		cur, ok = nxt, more
	}
	if err != nil {
		return res, err
	}
	fmt.Fprintf(bw, "%s%d requests\n", simulate.RequestTraceEndPrefix, written)
	if err := bw.Flush(); err != nil {
		return res, fmt.Errorf("write the trace: %w", err)
	}
	res.Requests = written
	return res, nil
}

// zoneNote says how a zone-less time of format was read.
func zoneNote(format string) string {
	if format == TimeSQL {
		return " (a time without a zone is UTC)"
	}
	return ""
}

// appendSeconds appends ns nanoseconds as decimal seconds, trailing zeros of the fraction dropped: 12.5, 0.0125, 3.
func appendSeconds(b []byte, ns int64) []byte {
	b = strconv.AppendInt(b, ns/1e9, 10)
	frac := ns % 1e9
	if frac == 0 {
		return b
	}
	var digits [9]byte
	for i := 8; i >= 0; i-- {
		digits[i] = byte('0' + frac%10)
		frac /= 10
	}
	end := 9
	for end > 0 && digits[end-1] == '0' {
		end--
	}
	b = append(b, '.')
	return append(b, digits[:end]...)
}

// readLog reads the rows of the log, handing each request's time to add, and returns the counts.
func readLog(ctx context.Context, r io.Reader, o ImportOptions, add func(int64) error) (ImportResult, error) {
	res := ImportResult{Name: o.Name, TimeFormat: o.TimeFormat}
	var bad []BadRow
	stopped := false
	// take handles one row's time text, or its problem when the row has no time to read (problem != ""); it
	// returns false when reading must stop.
	take := func(row, line int64, value, problem string) (bool, error) {
		res.Rows++
		if row%65536 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		reason := problem
		var ns int64
		value = strings.TrimSpace(value)
		switch {
		case problem != "":
		case value == "":
			reason = "empty"
		default:
			if res.TimeFormat == TimeAuto {
				f := detectTimeFormat(value)
				if f == "" {
					reason = "not a time in a format auto detection knows (RFC 3339, Unix seconds or milliseconds, SQL): give --time-format"
					break
				}
				res.TimeFormat = f
			}
			var err error
			if ns, err = parseTime(res.TimeFormat, value); err != nil {
				reason = err.Error()
				if o.TimeFormat == TimeAuto {
					reason += fmt.Sprintf(" (the first time's format, detected as %s)", res.TimeFormat)
				}
			}
		}
		if reason != "" {
			res.Skipped++
			if len(bad) < maxBadExamples {
				bad = append(bad, BadRow{Row: row, Line: line, Column: o.TimeColumn, Value: shorten(value, 60), Reason: reason})
			}
			if !o.SkipBad && len(bad) == maxBadExamples {
				stopped = true
				return false, nil
			}
			return true, nil
		}
		return true, add(ns)
	}
	var err error
	if o.Format == FormatCSV {
		err = readCSV(r, o, take)
	} else {
		err = readJSONL(r, o, take)
	}
	res.Bad = bad
	if err != nil {
		return res, err
	}
	if len(bad) > 0 && !o.SkipBad {
		return res, &BadRowsError{Name: o.Name, Rows: bad, More: stopped}
	}
	return res, nil
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

type takeFunc func(row, line int64, value, problem string) (bool, error)

// noColumn is the problem of a row without the time column.
const noColumn = "the row has no such column"

func readCSV(r io.Reader, o ImportOptions, take takeFunc) error {
	br := bufio.NewReaderSize(r, 1<<16)
	if bom, _ := br.Peek(3); string(bom) == "\uFEFF" {
		br.Discard(3) // a spreadsheet's UTF-8 export starts with a byte-order mark; it is not part of the header
	}
	cr := csv.NewReader(br)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = -1
	header, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("%s is empty: want a header row naming the columns, then one row per request", o.Name)
	}
	if err != nil {
		return fmt.Errorf("%s: the header row: %w", o.Name, err)
	}
	header = slices.Clone(header)
	col := -1
	for i, h := range header {
		if strings.TrimSpace(h) == o.TimeColumn {
			col = i
			break
		}
	}
	if col < 0 {
		return &MissingColumnError{Name: o.Name, Column: o.TimeColumn, Present: header}
	}
	var row int64
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		row++
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			// A line that is not CSV (a stray quote) names its line; the reader goes on after it.
			if cont, terr := take(row, int64(pe.StartLine), "", "not CSV: "+pe.Err.Error()); terr != nil || !cont {
				return terr
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s: %w", o.Name, err)
		}
		line, _ := cr.FieldPos(0)
		var cont bool
		var terr error
		if col >= len(rec) {
			cont, terr = take(row, int64(line), "", noColumn)
		} else {
			cont, terr = take(row, int64(line), rec[col], "")
		}
		if terr != nil || !cont {
			return terr
		}
	}
}

func readJSONL(r io.Reader, o ImportOptions, take takeFunc) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), maxLineBytes)
	var line, row int64
	objects := false
	for sc.Scan() {
		line++
		b := sc.Bytes()
		if line == 1 {
			b = []byte(strings.TrimPrefix(string(b), "\uFEFF"))
		}
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		row++
		value, found, keys, err := jsonField(b, o.TimeColumn, !objects)
		if err != nil {
			if cont, terr := take(row, line, shorten(string(b), 60), "not a JSON object"); terr != nil || !cont {
				return terr
			}
			continue
		}
		if !found && !objects {
			// The first object names the keys the log has.
			return &MissingColumnError{Name: o.Name, Column: o.TimeColumn, Present: keys}
		}
		objects = true
		problem := ""
		if !found {
			problem = noColumn
		}
		cont, terr := take(row, line, value, problem)
		if terr != nil || !cont {
			return terr
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s line %d: longer than %d bytes: not one request per line", o.Name, line+1, maxLineBytes)
		}
		return fmt.Errorf("read %s: %w", o.Name, err)
	}
	if row == 0 {
		return fmt.Errorf("%s is empty: want one JSON object per line, one per request", o.Name)
	}
	return nil
}

// sorter sorts int64 times in bounded memory: runs of runSize sorted in memory, spilled to files in dir when
// there is more than one, merged at the end.
type sorter struct {
	runSize  int
	dir      string
	buf      []int64
	runs     []*os.File
	tmpDir   string
	sorted   bool
	started  bool
	last     int64
	min, max int64
}

func (s *sorter) add(t int64) error {
	if !s.started {
		s.started, s.sorted, s.min, s.max = true, true, t, t
	} else {
		s.sorted = s.sorted && t >= s.last
		s.min, s.max = min(s.min, t), max(s.max, t)
	}
	s.last = t
	s.buf = append(s.buf, t)
	if len(s.buf) >= s.runSize {
		return s.spill()
	}
	return nil
}

// spill sorts the buffer and writes it to a new run file: varint deltas from the previous time.
func (s *sorter) spill() error {
	slices.Sort(s.buf)
	if s.tmpDir == "" {
		d, err := os.MkdirTemp(s.dir, ".traffic-import-*")
		if err != nil {
			return fmt.Errorf("sort the requests: a temporary directory: %w", err)
		}
		s.tmpDir = d
	}
	f, err := os.CreateTemp(s.tmpDir, "run-*")
	if err != nil {
		return fmt.Errorf("sort the requests: %w", err)
	}
	s.runs = append(s.runs, f)
	bw := bufio.NewWriterSize(f, 1<<16)
	var prev int64
	var tmp [binary.MaxVarintLen64]byte
	for i, t := range s.buf {
		d := t - prev
		if i == 0 {
			d = t
		}
		bw.Write(tmp[:binary.PutVarint(tmp[:], d)])
		prev = t
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("sort the requests: write %s: %w", f.Name(), err)
	}
	s.buf = s.buf[:0]
	return nil
}

func (s *sorter) cleanup() {
	for _, f := range s.runs {
		f.Close()
	}
	if s.tmpDir != "" {
		os.RemoveAll(s.tmpDir)
	}
}

// merged returns the times in order, one per call, until ok is false.
func (s *sorter) merged() (func() (int64, bool, error), error) {
	if len(s.runs) == 0 {
		slices.Sort(s.buf)
		i := 0
		return func() (int64, bool, error) {
			if i == len(s.buf) {
				return 0, false, nil
			}
			i++
			return s.buf[i-1], true, nil
		}, nil
	}
	if len(s.buf) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	h := &runHeap{}
	for _, f := range s.runs {
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("sort the requests: %w", err)
		}
		rr := &runReader{r: bufio.NewReaderSize(f, 1<<16)}
		if ok, err := rr.next(); err != nil {
			return nil, err
		} else if ok {
			*h = append(*h, rr)
		}
	}
	heap.Init(h)
	return func() (int64, bool, error) {
		if h.Len() == 0 {
			return 0, false, nil
		}
		top := (*h)[0]
		v := top.cur
		ok, err := top.next()
		if err != nil {
			return 0, false, err
		}
		if ok {
			heap.Fix(h, 0)
		} else {
			heap.Pop(h)
		}
		return v, true, nil
	}, nil
}

type runReader struct {
	r       *bufio.Reader
	cur     int64
	started bool
}

func (r *runReader) next() (bool, error) {
	d, err := binary.ReadVarint(r.r)
	if errors.Is(err, io.EOF) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sort the requests: read a run: %w", err)
	}
	if r.started {
		r.cur += d
	} else {
		r.cur, r.started = d, true
	}
	return true, nil
}

type runHeap []*runReader

func (h runHeap) Len() int           { return len(h) }
func (h runHeap) Less(i, j int) bool { return h[i].cur < h[j].cur }
func (h runHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runHeap) Push(x any)        { *h = append(*h, x.(*runReader)) }
func (h *runHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
