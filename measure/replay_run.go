package measure

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

// Replay is one replay of a traffic trace as open-loop load, as tts-bench replay's Validate resolved it from the
// command line: the model and its SLO, the trace and this shard's part of it, the arrival process, the
// transport and where the records go.
type Replay struct {
	Transport, URL string
	MaxWorkers     int
	RequestTimeout time.Duration
	RunID          string
	Bucket, Poll   time.Duration
	Seed           uint64
	Output, Format string
	// AWSConfig loads the AWS configuration of --local, --region and --profile (awsenv.Settings.Config).
	AWSConfig      func(context.Context) (aws.Config, error)
	Stdout, Stderr io.Writer

	Model         models.Model
	SLO           time.Duration
	Trace         simulate.Trace
	TraceDigest   string
	Segments      []bench.Segment
	Shard, Shards int
	Arrivals      bench.ArrivalProcess
	Start         time.Time
	Corpus        *bench.Corpus
}

// Run drives the trace's open-loop load (this shard's part), polls the instance counts, writes the records
// with their end record and the instance samples, then prints the per-minute report.
func (o *Replay) Run(ctx context.Context) error {
	cfg := bench.OpenLoopConfig{
		Segments: o.Segments, Shard: o.Shard, Shards: o.Shards, MaxWorkers: o.MaxWorkers, RequestTimeout: o.RequestTimeout,
		Process: o.Arrivals, Start: o.Start, Corpus: o.Corpus, Seed: o.Seed, RunID: o.RunID, Trace: o.TraceDigest,
	}
	var poll func(context.Context) (InstanceSample, error)
	if o.Transport == capacity.TransportHTTP {
		cfg.Transport = bench.NewHTTP(o.URL)
	} else {
		awsCfg, err := o.AWSConfig(ctx)
		if err != nil {
			return err
		}
		cl := cloud.NewClients(awsCfg)
		name := o.Model.EndpointName()
		poll = func(ctx context.Context) (InstanceSample, error) {
			return describeInstances(ctx, cl.SageMaker, name, true) // one attempt: the poller backs off itself
		}
		if _, err := describeInstances(ctx, cl.SageMaker, name, false); err != nil { // with the SDK's retries
			if cloud.IsNotFound(err) {
				return exitcode.CheckFailedf("replay: the endpoint %s does not exist: deploy it first (speech-infra deploy %s)", name, o.Model.ID)
			}
			// Anything else (a closed port, expired credentials, throttling) is not a missing endpoint: say what
			// it was, and let the exit code say the run could not start.
			return fmt.Errorf("replay: %w", err)
		}
		// One client per worker: a client's event-stream decoder races when several streams are open on it
		// (aws/smithy-go#714).
		cfg.Transport = cl.StreamTransport(name)
	}

	// The records go to a temporary file beside --output, renamed into place at the end: readers see no
	// half-written records file, and a day-long run does not hold its records in memory.
	tmp, err := os.CreateTemp(filepath.Dir(o.Output), "."+filepath.Base(o.Output)+".tmp*")
	if err != nil {
		return fmt.Errorf("replay: create the records file: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	gz := gzip.NewWriter(tmp)
	cfg.Records = gz

	log := InstanceLog{RunID: o.RunID, Trace: o.TraceDigest, Endpoint: o.Model.EndpointName()}
	var mu sync.Mutex
	// The poller and the load's progress both write to stderr: one lock keeps their lines whole (the race
	// detector caught the poller's back-off line racing the start line).
	stderr := &LockedWriter{W: o.Stderr}
	pollCtx, stopPoll := context.WithCancel(ctx)
	var pollDone sync.WaitGroup
	var backoff cloud.Backoff
	if poll != nil {
		pollDone.Add(1)
		go func() {
			defer pollDone.Done()
			for {
				rctx, cancel := context.WithTimeout(pollCtx, o.Poll)
				s, err := poll(rctx)
				cancel()
				// A throttled read waits the back-off (recorded in the instance log), not the interval.
				wait := backoff.Next("DescribeEndpoint", err, o.Poll, time.Now())
				if err == nil {
					mu.Lock()
					log.Samples = append(log.Samples, s)
					mu.Unlock()
				} else if pollCtx.Err() == nil {
					if cloud.IsThrottled(err) {
						fmt.Fprintf(stderr, "replay: reading the instance count was throttled: backing off %s\n", wait)
					} else {
						fmt.Fprintf(stderr, "replay: read the instance count: %v\n", err)
					}
				}
				select {
				case <-pollCtx.Done():
					return
				case <-time.After(wait):
				}
			}
		}()
	}
	fmt.Fprintf(stderr, "replay %s: %s (%s, %s), shard %d/%d, open loop, %s arrivals (seed %d), up to %d workers, run %s\n",
		o.Model.ID, o.Trace.Name, o.Trace.Duration, o.TraceDigest[:19], o.Shard, o.Shards, o.Arrivals, o.Seed, o.MaxWorkers, o.RunID)
	cfg.Observer = replayProgress(stderr)
	res, runErr := bench.RunOpenLoop(ctx, cfg)
	stopPoll()
	pollDone.Wait()
	log.Backoffs = backoff.Events()
	if sum := backoff.Summary(); sum != "" {
		fmt.Fprintf(o.Stderr, "replay: throttled while reading the instance count: %s (recorded in %s)\n", sum, InstancesPath(o.Output))
	}
	if err := gz.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("replay: write the records: %w", err)
	}
	if err := tmp.Sync(); err != nil && runErr == nil {
		runErr = fmt.Errorf("replay: write the records: %w", err)
	}
	if res.Scheduled == 0 {
		if runErr != nil {
			return runErr
		}
		return fmt.Errorf("replay: shard %d/%d of the trace has no arrivals: the trace offers too few requests for %d shards", o.Shard, o.Shards, o.Shards)
	}
	// The end record goes last (WriteShardEnd): whether this shard sent its whole part, and up to which arrival.
	if err := o.writeShardEnd(tmp, res, runErr); err != nil {
		return fmt.Errorf("replay: write the records' end record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("replay: write the records: %w", err)
	}
	if err := os.Rename(tmp.Name(), o.Output); err != nil {
		return fmt.Errorf("replay: write the records: %w", err)
	}
	fmt.Fprintf(o.Stderr, "replay: %d records written to %s\n", res.Scheduled, o.Output)
	if poll != nil {
		data, err := json.MarshalIndent(log, "", "  ")
		if err == nil {
			err = capacity.WriteFileAtomic(InstancesPath(o.Output), append(data, '\n'))
		}
		if err != nil {
			return fmt.Errorf("replay: write the instance samples: %w", err)
		}
	}
	if runErr != nil {
		return fmt.Errorf("replay stopped early (the records so far are in %s): %w", o.Output, runErr)
	}
	recs, err := ReadRecordsFile(o.Output)
	if err != nil {
		return err
	}
	rep, err := NewReplayReport(recs, log.Samples, o.Bucket, o.SLO, o.Model.ID)
	if err != nil {
		return err
	}
	rep.Files = []string{o.Output}
	return rep.Write(o.Stdout, o.Format)
}

// describeInstances reads the instance counts of the endpoint's variant; pollOnce makes the read a single
// attempt (cloud.PollOnceSageMaker), for a poller that backs off itself.
func describeInstances(ctx context.Context, api cloud.EndpointDescribeAPI, name string, pollOnce bool) (InstanceSample, error) {
	read := func() (cloud.EndpointState, error) { return cloud.ReadEndpoint(ctx, api, name, models.VariantName) }
	if pollOnce {
		read = func() (cloud.EndpointState, error) {
			return cloud.ReadEndpoint(ctx, api, name, models.VariantName, cloud.PollOnceSageMaker)
		}
	}
	st, err := read()
	if err != nil {
		return InstanceSample{}, fmt.Errorf("describe endpoint %s: %w", name, err)
	}
	return InstanceSample{At: time.Now().UTC(), Current: int(st.Instances), Desired: int(st.DesiredInstances)}, nil
}

// replayProgress prints one line about every 10 s to w.
func replayProgress(w io.Writer) func(bench.OpenLoopProgress) {
	var last time.Time
	return func(p bench.OpenLoopProgress) {
		if !p.Done && time.Since(last) < 10*time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "replay: %s of %s: %d arrivals, %d sent, %d dropped, %d in flight, %d ok, %d shed, %d failed\n",
			p.Elapsed.Truncate(time.Second), p.Duration, p.Scheduled, p.Sent, p.Dropped, p.InFlight, p.OK, p.Shed, p.Failed)
	}
}

// writeShardEnd appends the end record to a replay's records file (tmp, its records member closed and
// synced): complete when the run ended without error, with the arrivals the file holds and the last one.
func (o *Replay) writeShardEnd(tmp *os.File, res bench.OpenLoopResult, runErr error) error {
	n, last, _, err := RecordsEnd(tmp.Name())
	if err != nil {
		return err
	}
	e := ShardEnd{Complete: runErr == nil && n == res.Scheduled, Arrivals: n, LastArrival: last, StoppedAtS: o.Trace.Duration.Seconds()}
	if !e.Complete {
		// The first of this shard's arrivals after the last one scheduled.
		for k, off := range bench.ShardArrivals(bench.TraceArrivals(o.Segments, o.Arrivals, o.Seed), o.Shard, o.Shards) {
			if k > last {
				e.StoppedAtS = off.Seconds()
				break
			}
		}
		e.Reason = "stopped"
		if runErr != nil {
			e.Reason = runErr.Error()
		}
	}
	if _, err := tmp.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if err := WriteShardEnd(tmp, e); err != nil {
		return err
	}
	return tmp.Sync()
}

// TraceSegments turns a trace's points into the executor's segments.
func TraceSegments(tr simulate.Trace) []bench.Segment {
	segs := make([]bench.Segment, 0, len(tr.Points))
	for i, p := range tr.Points {
		end := tr.Duration
		if i+1 < len(tr.Points) {
			end = tr.Points[i+1].At
		}
		segs = append(segs, bench.Segment{Duration: end - p.At, RPS: p.RPS})
	}
	return segs
}

// TraceDigest identifies a trace by its points and length (not its name): "sha256:<hex>".
func TraceDigest(tr simulate.Trace) string {
	h := sha256.New()
	var b [16]byte
	for _, p := range tr.Points {
		binary.BigEndian.PutUint64(b[:8], uint64(p.At))
		binary.BigEndian.PutUint64(b[8:], math.Float64bits(p.RPS))
		h.Write(b[:])
	}
	binary.BigEndian.PutUint64(b[:8], uint64(tr.Duration))
	h.Write(b[:8])
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// NewReplayRunID is a time-ordered, unique run id: replay-20260130T120000Z-1a2b3c4d.
func NewReplayRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "replay-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// ParseShard reads a replay's shard "i/n", 0 ≤ i < n ≤ 1000: the i-th of n machines replaying one trace.
func ParseShard(s string) ([2]int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return [2]int{}, fmt.Errorf("%q: want i/n, e.g. 0/4 for the first of four shards", s)
	}
	if n < 1 || n > 1000 {
		return [2]int{}, fmt.Errorf("%q: the shard count %d: want 1 to 1000", s, n)
	}
	if i < 0 || i >= n {
		return [2]int{}, fmt.Errorf("%q: the shard index %d: want 0 to %d (shards count from 0)", s, i, n-1)
	}
	return [2]int{i, n}, nil
}

// ValidRunID says whether s can name a replay run: 1 to 64 letters, digits, '.', '_' or '-', not "." or
// "..", since it becomes part of a file name.
func ValidRunID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return s != "." && s != ".."
}
