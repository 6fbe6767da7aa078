package measure

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/bench"
)

// A replay records file is gzip: one member with the records (JSON lines), then an empty member whose
// header carries the shard's end record (ShardEnd, JSON in the header's comment, the name shardEndName).
// The end record is written last, after the records are flushed: a file without it was cut short (the
// process killed, the disk full) or written by a tts-bench too old to write it. It says whether the shard sent
// its whole part of the trace or stopped early (SIGINT, SIGTERM, an error), and up to which arrival.

// shardEndName is the gzip header name of the end member.
const shardEndName = "speech-infra-replay-end"

// maxShardEndComment bounds the end record: Go's gzip reader refuses header strings of 512 bytes or more.
const maxShardEndComment = 500

// ShardEnd is a replay shard's end record.
type ShardEnd struct {
	// Complete is true when the shard scheduled every one of its arrivals of the trace and the run ended
	// without error.
	Complete bool `json:"complete"`
	// Arrivals counts the records the file holds (one per scheduled arrival).
	Arrivals int64 `json:"arrivals"`
	// LastArrival is the index of the last arrival scheduled (-1 when none was).
	LastArrival int64 `json:"last_arrival"`
	// StoppedAtS is the trace time, in seconds from the trace's time 0, of the shard's first arrival that was
	// not scheduled: every slice from the one holding it on misses this shard's arrivals. The trace's
	// duration when none is missing.
	StoppedAtS float64 `json:"stopped_at_s"`
	// Reason says why an incomplete shard stopped.
	Reason string `json:"reason,omitempty"`
}

// WriteShardEnd appends the end member to w (the records file, after the records' gzip member is closed).
func WriteShardEnd(w io.Writer, e ShardEnd) error {
	// The comment is ISO 8859-1 without NUL: keep the reason printable ASCII, and the whole short.
	e.Reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '?'
		}
		return r
	}, e.Reason)
	for {
		data, err := json.Marshal(e)
		if err != nil {
			return err
		}
		if len(data) <= maxShardEndComment || e.Reason == "" {
			zw := gzip.NewWriter(w)
			zw.Name, zw.Comment = shardEndName, string(data)
			if _, err := zw.Write(nil); err != nil {
				return err
			}
			return zw.Close()
		}
		e.Reason = e.Reason[:len(e.Reason)/2]
	}
}

// RecordsEnd reads back a records file's records member (gzip) and returns what its end record should say
// about the arrivals: how many, the last index and its scheduled time.
func RecordsEnd(path string) (n, last int64, lastAt time.Time, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, -1, time.Time{}, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return 0, -1, time.Time{}, err
	}
	defer zr.Close()
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 0, 64<<10), bench.MaxRecordLine)
	last = -1
	for sc.Scan() {
		var r struct {
			Arrival *struct {
				Index     int64     `json:"index"`
				Scheduled time.Time `json:"scheduled"`
			} `json:"arrival"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return 0, -1, time.Time{}, fmt.Errorf("records line %d: %w", n+1, err)
		}
		n++
		if r.Arrival != nil && r.Arrival.Index > last {
			last, lastAt = r.Arrival.Index, r.Arrival.Scheduled
		}
	}
	return n, last, lastAt, sc.Err()
}

// gzipMembers reads a gzip file member by member: Read returns the members' data as one stream (as gzip
// -d does), and end is the shard end record, when the last member carries one.
type gzipMembers struct {
	br   *bufio.Reader
	zr   *gzip.Reader
	end  *ShardEnd
	err  error
	path string
}

func newGzipMembers(path string, br *bufio.Reader) (*gzipMembers, error) {
	zr, err := gzip.NewReader(br)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	zr.Multistream(false)
	g := &gzipMembers{br: br, zr: zr, path: path}
	if err := g.header(); err != nil {
		return nil, err
	}
	return g, nil
}

// header reads the end record from the current member's header, if it is the end member.
func (g *gzipMembers) header() error {
	if g.zr.Name != shardEndName {
		return nil
	}
	var e ShardEnd
	dec := json.NewDecoder(strings.NewReader(g.zr.Comment))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		return fmt.Errorf("%s: the shard's end record %q does not parse: %w", g.path, g.zr.Comment, err)
	}
	if e.Arrivals < 0 || e.LastArrival < -1 || math.IsNaN(e.StoppedAtS) || e.StoppedAtS < 0 {
		return fmt.Errorf("%s: the shard's end record %q holds a negative count or time", g.path, g.zr.Comment)
	}
	g.end = &e
	return nil
}

// Read implements io.Reader.
func (g *gzipMembers) Read(p []byte) (int, error) {
	for {
		if g.err != nil {
			return 0, g.err
		}
		n, err := g.zr.Read(p)
		if err != io.EOF {
			return n, err
		}
		if g.end != nil {
			// Nothing may follow the end member, and it holds no data.
			if n > 0 {
				return 0, fmt.Errorf("%s: the shard's end member holds data", g.path)
			}
			if _, err := g.br.Peek(1); err != io.EOF {
				g.err = fmt.Errorf("%s: data follows the shard's end record", g.path)
				return 0, g.err
			}
			g.err = io.EOF
			return 0, io.EOF
		}
		switch err := g.zr.Reset(g.br); {
		case err == io.EOF:
			g.err = io.EOF
		case err != nil:
			g.err = fmt.Errorf("%s: %w", g.path, err)
		default:
			g.zr.Multistream(false)
			g.err = g.header()
		}
		if n > 0 {
			return n, nil
		}
	}
}

// checkRecordValues refuses numbers no run writes: negative durations, sizes or stall, and an end before
// the send.
func checkRecordValues(path string, recs []bench.Record) error {
	var errs []error
	for i, r := range recs {
		for _, f := range []struct {
			name string
			v    float64
		}{{"ttfab_ms", r.TTFABMs}, {"response_ms", r.ResponseMs}, {"stall_ms", r.StallMs}, {"audio_seconds", r.AudioSeconds},
			{"bytes", float64(r.Bytes)}, {"audio_bytes", float64(r.AudioBytes)}} {
			if f.v < 0 {
				errs = append(errs, fmt.Errorf("%s: record %d (arrival %s) has %s %v: a negative value no run writes: the file was edited or is corrupt", path, i+1, arrivalOf(r), f.name, f.v))
			}
		}
		if r.End.Before(r.Sent) {
			errs = append(errs, fmt.Errorf("%s: record %d (arrival %s) ends before it was sent: the file was edited or is corrupt", path, i+1, arrivalOf(r)))
		}
		if len(errs) >= 10 {
			errs = append(errs, errors.New("(more records are refused; the first ten are shown)"))
			break
		}
	}
	return errors.Join(errs...)
}

func arrivalOf(r bench.Record) string {
	if r.Arrival == nil {
		return "none"
	}
	return fmt.Sprint(r.Arrival.Index)
}

// shortSlices returns the slices (by index) an incomplete shard leaves short: those from the one in which it
// stopped to the last.
func shortSlices(stoppedAt, bucket time.Duration, slices int) []int {
	var out []int
	for i := int(max(stoppedAt, 0) / bucket); i < slices; i++ {
		out = append(out, i)
	}
	return out
}

// sliceList renders slice indexes as their start times, a long run of them as a range.
func sliceList(idx []int, bucket time.Duration) string {
	if len(idx) == 0 {
		return "none"
	}
	at := func(i int) string { return clock(time.Duration(i) * bucket) }
	if len(idx) > 6 && idx[len(idx)-1]-idx[0] == len(idx)-1 {
		return fmt.Sprintf("%s to %s (%d slices)", at(idx[0]), at(idx[len(idx)-1]), len(idx))
	}
	parts := make([]string, len(idx))
	for i, v := range idx {
		parts[i] = at(v)
	}
	return strings.Join(parts, ", ")
}
