package measure

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// MaxRecordsFileBytes bounds a records file after decompression; bench.MaxRecords, the records held in memory
// across all shards, comes first for any real run.
const MaxRecordsFileBytes = 64 << 30

// shardFile is what one records file holds.
type shardFile struct {
	path          string
	runID, trace  string
	shard, shards int
	recs          []bench.Record
	instances     []InstanceSample
	hasInstances  bool
	// end is the shard's end record; nil when the file has none.
	end *ShardEnd
}

// stoppedAt is the trace time up to which the shard scheduled its arrivals: its end record's, or without
// one the last record's scheduled time.
func (s shardFile) stoppedAt() time.Duration {
	if s.end != nil {
		return time.Duration(s.end.StoppedAtS * float64(time.Second))
	}
	var at time.Duration
	for _, r := range s.recs {
		at = max(at, r.Arrival.Scheduled.Sub(r.WindowStart))
	}
	return at
}

// early says why a shard did not send its whole part of the trace ("" when it did).
func (s shardFile) early() string {
	switch {
	case s.end == nil:
		return fmt.Sprintf("%s has no end record: the replay that wrote it was killed before it finished the file (or it predates end records); its last arrival is %d at %s of the trace",
			s.path, s.recs[len(s.recs)-1].Arrival.Index, clock(s.stoppedAt()))
	case !s.end.Complete:
		why := ""
		if s.end.Reason != "" {
			why = " (" + s.end.Reason + ")"
		}
		return fmt.Sprintf("%s: shard %d/%d stopped early%s after arrival %d (%d arrivals): it did not send its arrivals from %s s of the trace on",
			s.path, s.shard, s.shards, why, s.end.LastArrival, s.end.Arrivals, capacity.FormatNumber(round(s.stoppedAt().Seconds(), 3)))
	}
	return ""
}

// MergeShards reads the files, checks that they are the shards of one run of one trace (every problem at once,
// as a usage error), and returns their records, the instance samples of the first file that has them, and the
// shards that stopped early (merged only with force).
func MergeShards(files []string, force bool, stderr io.Writer) ([]bench.Record, []InstanceSample, []shardFile, error) {
	var errs, forcible []error
	var shards []shardFile
	// Every shard's records are held at once: bench.MaxRecords bounds them all together, not each file.
	budget := bench.MaxRecords
	for _, path := range files {
		sf, err := readShardFile(path, budget)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		budget -= len(sf.recs)
		shards = append(shards, sf)
	}
	if len(errs) > 0 {
		return nil, nil, nil, exitcode.Usage(errors.Join(errs...))
	}
	first := shards[0]
	var early []shardFile
	for _, s := range shards {
		if why := s.early(); why != "" {
			early = append(early, s)
			forcible = append(forcible, errors.New(why))
		}
	}
	byShard := map[int]string{}
	for _, s := range shards {
		if s.runID != first.runID {
			forcible = append(forcible, fmt.Errorf("%s is run %s, %s is run %s: the files are of different runs", s.path, s.runID, first.path, first.runID))
		}
		if s.trace != first.trace {
			forcible = append(forcible, fmt.Errorf("%s replayed trace %s, %s trace %s: the files are of different traces", s.path, s.trace, first.path, first.trace))
		}
		if s.shards != first.shards {
			errs = append(errs, fmt.Errorf("%s is shard %d/%d, %s shard %d/%d: the files split the trace differently", s.path, s.shard, s.shards, first.path, first.shard, first.shards))
		}
		if prev, ok := byShard[s.shard]; ok {
			errs = append(errs, fmt.Errorf("%s and %s are both shard %d/%d: give each shard's file once", prev, s.path, s.shard, s.shards))
		}
		byShard[s.shard] = s.path
	}
	if len(errs) == 0 {
		var missing []string
		for i := range first.shards {
			if _, ok := byShard[i]; !ok {
				missing = append(missing, strconv.Itoa(i))
			}
		}
		if len(missing) > 0 {
			forcible = append(forcible, fmt.Errorf("shard(s) %s of %d are missing: the report would cover part of the trace", strings.Join(missing, ", "), first.shards))
		}
	}
	if len(forcible) > 0 && !force {
		errs = append(errs, forcible...)
		errs = append(errs, errors.New("merge only the complete shards of one run (pass --force to merge anyway; the report then names the slices that are short)"))
	}
	if len(errs) > 0 {
		return nil, nil, nil, exitcode.Usage(errors.Join(errs...))
	}
	for _, err := range forcible {
		fmt.Fprintf(stderr, "report: warning (--force): %v\n", err)
	}
	var recs []bench.Record
	seen := map[int64]string{}
	var samples []InstanceSample
	for _, s := range shards {
		for _, r := range s.recs {
			if prev, ok := seen[r.Arrival.Index]; ok && !force {
				return nil, nil, nil, exitcode.Usagef("arrival %d is recorded in %s and in %s: a file was given twice or the shards overlap", r.Arrival.Index, prev, s.path)
			}
			seen[r.Arrival.Index] = s.path
		}
		recs = append(recs, s.recs...)
		if samples == nil && s.hasInstances {
			samples = s.instances
		}
	}
	sort.SliceStable(recs, func(i, k int) bool { return recs[i].Arrival.Index < recs[k].Arrival.Index })
	return recs, samples, early, nil
}

// readShardFile reads one records file of a replay (gzip, with its end record) and the instance samples
// beside it.
func readShardFile(path string, maxRecords int) (shardFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return shardFile{}, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	if magic, _ := br.Peek(2); len(magic) < 2 || magic[0] != 0x1f || magic[1] != 0x8b {
		return shardFile{}, fmt.Errorf("%s is not gzip: tts-bench replay writes its records gzipped (.jsonl.gz) with the shard's end record; give the file replay wrote", path)
	}
	g, err := newGzipMembers(path, br)
	if err != nil {
		return shardFile{}, err
	}
	recs, err := bench.ReadRecordsMax(io.LimitReader(g, MaxRecordsFileBytes), maxRecords)
	if err != nil {
		if !strings.HasPrefix(err.Error(), path) {
			err = fmt.Errorf("%s: %w", path, err)
		}
		return shardFile{}, err
	}
	if err := checkRecordValues(path, recs); err != nil {
		return shardFile{}, err
	}
	sf := shardFile{path: path, recs: recs, end: g.end}
	if sf.end != nil && sf.end.Arrivals != int64(len(recs)) {
		return shardFile{}, fmt.Errorf("%s: the shard's end record counts %d arrivals, the file holds %d records: the file was edited or is corrupt", path, sf.end.Arrivals, len(recs))
	}
	for i, r := range recs {
		if r.Arrival == nil {
			return shardFile{}, fmt.Errorf("%s: record %d has no arrival: the file is from tts-bench qmax (closed loop), not replay", path, i+1)
		}
		if i == 0 {
			sf.runID, sf.trace, sf.shard, sf.shards = r.RunID, r.Arrival.Trace, r.Arrival.Shard, r.Arrival.Shards
			continue
		}
		if r.RunID != sf.runID || r.Arrival.Trace != sf.trace || r.Arrival.Shard != sf.shard || r.Arrival.Shards != sf.shards {
			return shardFile{}, fmt.Errorf("%s: record %d is run %s shard %d/%d, record 1 run %s shard %d/%d: a records file holds one shard of one run",
				path, i+1, r.RunID, r.Arrival.Shard, r.Arrival.Shards, sf.runID, sf.shard, sf.shards)
		}
	}
	if sf.shards < 1 || sf.shard < 0 || sf.shard >= sf.shards {
		return shardFile{}, fmt.Errorf("%s: shard %d/%d: want 0 ≤ i < n", path, sf.shard, sf.shards)
	}
	data, err := os.ReadFile(InstancesPath(path))
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return shardFile{}, fmt.Errorf("%s: %w", InstancesPath(path), err)
	default:
		var log InstanceLog
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&log); err != nil {
			return shardFile{}, fmt.Errorf("%s: %w: it is written by tts-bench replay beside its records", InstancesPath(path), err)
		}
		if log.RunID == sf.runID && log.Trace == sf.trace {
			sf.instances, sf.hasInstances = log.Samples, true
		}
	}
	return sf, nil
}

// ReadRecordsFile reads a records file, gzipped or not.
func ReadRecordsFile(path string) ([]bench.Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	var r io.Reader = br
	if magic, _ := br.Peek(2); len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		defer zr.Close()
		r = zr
	}
	recs, err := bench.ReadRecords(io.LimitReader(r, MaxRecordsFileBytes))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return recs, nil
}

// ReplayReport is the per-slice report of a replay (one run, or its shards merged).
type ReplayReport struct {
	Model      string                `json:"model"`
	RunID      string                `json:"run_id"`
	Trace      string                `json:"trace"`
	Shards     []int                 `json:"shards"`
	ShardCount int                   `json:"shard_count"`
	Files      []string              `json:"files"`
	SLOMs      float64               `json:"slo_ttfab_p95_ms"`
	Summary    bench.OpenLoopSummary `json:"summary"`
	// Instances and Desired are per slice: the largest CurrentInstanceCount read in it (else the last one
	// before it) and the desired count then; -1 when unknown.
	Instances []int `json:"instances"`
	Desired   []int `json:"desired"`
	// ShortSlices are the slices (by index) a shard that stopped early, merged with --force, left short:
	// their offered rate and counts miss that shard's arrivals.
	ShortSlices []int `json:"short_slices,omitempty"`
	// EarlyShards say which shards stopped early and why.
	EarlyShards []string `json:"early_shards,omitempty"`
}

// MarkShort records and reports (on stderr) the slices the shards that stopped early leave short.
func (r *ReplayReport) MarkShort(early []shardFile, bucket time.Duration, stderr io.Writer) {
	short := map[int]bool{}
	for _, s := range early {
		idx := shortSlices(s.stoppedAt(), bucket, len(r.Summary.Buckets))
		for _, i := range idx {
			short[i] = true
		}
		r.EarlyShards = append(r.EarlyShards, s.early())
		fmt.Fprintf(stderr, "report: warning (--force): shard %d/%d stopped at %s s of the trace: slices short of its arrivals: %s\n",
			s.shard, s.shards, capacity.FormatNumber(round(s.stoppedAt().Seconds(), 3)), sliceList(idx, bucket))
	}
	for i := range r.Summary.Buckets {
		if short[i] {
			r.ShortSlices = append(r.ShortSlices, i)
		}
	}
}

// NewReplayReport folds records and instance samples into the report.
func NewReplayReport(recs []bench.Record, samples []InstanceSample, bucket, slo time.Duration, model string) (*ReplayReport, error) {
	s, err := bench.SummarizeOpenLoop(recs, bucket, slo)
	if err != nil {
		return nil, err
	}
	rep := &ReplayReport{Model: model, RunID: recs[0].RunID, Trace: recs[0].Arrival.Trace, ShardCount: recs[0].Arrival.Shards,
		SLOMs: float64(slo) / float64(time.Millisecond), Summary: s}
	for _, r := range recs {
		if !slices.Contains(rep.Shards, r.Arrival.Shard) {
			rep.Shards = append(rep.Shards, r.Arrival.Shard)
		}
	}
	slices.Sort(rep.Shards)
	samples = slices.Clone(samples)
	sort.Slice(samples, func(i, k int) bool { return samples[i].At.Before(samples[k].At) })
	last, lastDesired := -1, -1
	j := 0
	for i := range s.Buckets {
		from := s.Start.Add(time.Duration(i) * bucket)
		to := from.Add(bucket)
		for ; j < len(samples) && samples[j].At.Before(from); j++ {
			last, lastDesired = samples[j].Current, samples[j].Desired
		}
		cur, des := -1, -1
		for ; j < len(samples) && samples[j].At.Before(to); j++ {
			cur, des = max(cur, samples[j].Current), max(des, samples[j].Desired)
			last, lastDesired = samples[j].Current, samples[j].Desired
		}
		if cur < 0 {
			cur, des = last, lastDesired
		}
		rep.Instances, rep.Desired = append(rep.Instances, cur), append(rep.Desired, des)
	}
	return rep, nil
}

// Write prints the report, then returns a check failure (exit 1) when a slice violated the SLO.
func (r *ReplayReport) Write(w io.Writer, format string) error {
	var err error
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		err = enc.Encode(r)
	} else {
		err = r.render(w)
	}
	if err != nil {
		return err
	}
	if n := r.Summary.SLOViolationBuckets; n > 0 {
		return exitcode.CheckFailedf("%d of %d slices violated the SLO (more than %s%% of their arrivals over %s ms TTFAB, shed, dropped or failed)",
			n, len(r.Summary.Buckets), capacity.FormatNumber(100*(1-bench.SLOPercentile/100.0)), capacity.FormatNumber(r.SLOMs))
	}
	return nil
}

// render writes the table.
func (r *ReplayReport) render(w io.Writer) error {
	s := r.Summary
	shards := make([]string, len(r.Shards))
	for i, v := range r.Shards {
		shards[i] = strconv.Itoa(v)
	}
	fmt.Fprintf(w, "replay %s of %s, run %s, trace %s\n", r.Model, s.Start.Format(time.RFC3339), r.RunID, r.Trace)
	fmt.Fprintf(w, "open loop; shards %s of %d; %d file(s); slices of %s; SLO p95 TTFAB %s ms\n\n",
		strings.Join(shards, ","), r.ShardCount, len(r.Files), s.Bucket, capacity.FormatNumber(r.SLOMs))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "time\toffered rps\tsent\tdropped\tinstances\tdesired\tp95 TTFAB ms\tover SLO\tshed %\terrors\tSLO\t")
	for i, b := range s.Buckets {
		verdict := "ok"
		if bench.SliceViolates(b.Scheduled, b.OverSLO, b.Shed+b.Errors+b.Dropped) {
			verdict = "VIOLATED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t\n", clock(b.Offset), capacity.FormatNumber(round(b.OfferedRPS, 2)), b.Sent, b.Dropped,
			count(r.Instances[i]), count(r.Desired[i]), capacity.FormatNumber(round(b.TTFABP95Ms, 1)), b.OverSLO, capacity.FormatNumber(round(100*b.ShedRate, 2)), b.Errors, verdict)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(r.ShortSlices) > 0 {
		fmt.Fprintf(w, "\nSHORT slices (a shard stopped early, merged with --force: their rates and counts miss its arrivals): %s\n",
			sliceList(r.ShortSlices, s.Bucket))
	}
	pct := func(n int) string {
		if s.Scheduled == 0 {
			return "0"
		}
		return capacity.FormatNumber(round(100*float64(n)/float64(s.Scheduled), 2))
	}
	_, err := fmt.Fprintf(w, "\narrivals %d: sent %d, dropped %d (%s%%), ok %d, shed %d (%s%%), errors %d (%d timeouts)\n"+
		"TTFAB p50 %s ms, p95 %s ms, p99 %s ms (exact, over every successful request)\n"+
		"SLO-violation slices: %d of %d\n",
		s.Scheduled, s.Sent, s.Dropped, pct(s.Dropped), s.OK, s.Shed, pct(s.Shed), s.Errors, s.Timeouts,
		capacity.FormatNumber(round(s.TTFABP50Ms, 1)), capacity.FormatNumber(round(s.TTFABP95Ms, 1)), capacity.FormatNumber(round(s.TTFABP99Ms, 1)),
		s.SLOViolationBuckets, len(s.Buckets))
	return err
}

// clock formats an offset from the trace's start as h:mm:ss.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d:%02d", int(d.Hours()), int(d.Minutes())%60, int(d.Seconds())%60)
}

func count(n int) string {
	if n < 0 {
		return "-"
	}
	return strconv.Itoa(n)
}

func round(x float64, places int) float64 {
	p := 1.0
	for range places {
		p *= 10
	}
	return float64(int64(x*p+0.5)) / p
}
