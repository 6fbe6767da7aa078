// Command loadengine is benchmark row 1: the load engine (bench.RunStep over the http transport)
// against wrk, hey and vegeta, each driving the calibration container with zero compute over loopback in a
// closed loop at the same concurrencies, one after the other at each concurrency (order rotated per
// concurrency) so that they see the same machine. It reports each tool's achieved request rate and the
// engine's client-side full-response time minus the container's own (total_ms of its request log) at p50
// and p99, and writes row 1 (perf/internal/row) with its charts.
//
//	go run ./perf/loadengine [-smoke] [-out .cache/bench] [-duration 8s] [-ladder 1,10,100,1000]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

// text is the one request every tool sends: one segment.
const text = "Hello world."

// fixed lists what this row's profiles led to change in bench/.
var fixed = []string{}

func main() {
	harness.Main("loadengine", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stdout, os.Stderr) })
}

type options struct {
	harness.Common
	ladder       []int
	requirePeers bool
	cpuProfile   string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("loadengine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := options{}
	var ladder string
	o.AddCommon(fs, "smallest size (C = 1 and 10, 1 s per tool): checks the program works")
	o.AddDuration(fs, 8*time.Second, time.Second, "how long each tool runs at each concurrency")
	fs.StringVar(&ladder, "ladder", "1,10,100,1000", "concurrencies, comma-separated")
	fs.BoolVar(&o.requirePeers, "require-peers", false, "fail when wrk or hey is not installed (else the row says not-measured)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the load engine's runs to this file")
	if err := harness.ParseFlags(fs, args, "every option is a flag"); err != nil {
		return o, err
	}
	if o.Smoke {
		ladder = "1,10"
	}
	errs := o.Check()
	for _, f := range strings.Split(ladder, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 5000 {
			errs = append(errs, fmt.Errorf("-ladder: %q: want whole numbers 1 to 5000, e.g. 1,10,100,1000", f))
			continue
		}
		o.ladder = append(o.ladder, n)
	}
	if len(errs) > 0 {
		return o, exitcode.Usage(errors.Join(errs...))
	}
	return o, nil
}

// step is what one concurrency measured.
type step struct {
	c                          int
	rate                       map[string]float64 // tool -> successful requests per second
	clientP50, clientP99       float64            // the engine's full-response time (ms)
	serverP50, serverP99       float64            // the container's total_ms over the same requests
	addedP50, addedP99         float64
	engineRequests, serverLogs int
	engineErrors               int
}

const (
	toolEngine = "tts-bench engine"
	toolWrk    = "wrk"
	toolHey    = "hey"
	toolVegeta = "vegeta"
)

var tools = []string{toolEngine, toolWrk, toolHey, toolVegeta}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	missing := []string{}
	for _, t := range []string{"wrk", "hey"} {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 && o.requirePeers {
		return fmt.Errorf("%s not installed: run scripts/apt-install-missing.sh %s", strings.Join(missing, " and "), strings.Join(missing, " "))
	}
	fdLimit := harness.RaiseFDLimit()
	started := time.Now().UTC()
	bin, err := harness.ContainerBinary(ctx)
	if err != nil {
		return err
	}
	workers := 2 * runtime.NumCPU()
	env := []string{"ENGINE=calibration", "CALIBRATION_SEGMENT_MS=0", "QUEUE_MAX_DEPTH=0",
		"ENGINE_WORKERS=" + strconv.Itoa(workers), "MAX_CONNECTIONS=8192", "METRICS_INTERVAL=60s"}
	ctr, err := harness.StartContainer(ctx, bin, env, harness.ContainerOutput{Stderr: stderr, RequestLogs: true})
	if err != nil {
		return err
	}
	defer ctr.Stop()

	var prof *os.File
	if o.cpuProfile != "" {
		if prof, err = os.Create(o.cpuProfile); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		defer prof.Close()
	}

	var steps []step
	rounds := o.Rounds()
	slice := o.Duration / time.Duration(rounds)
	for i, c := range o.ladder {
		s := step{c: c, rate: map[string]float64{}}
		perTool := map[string][]float64{}
		eng := &engineData{}
		// Short interleaved rounds, order rotated per round and concurrency, so a burst of load from other
		// processes on a shared machine hits every tool alike; each tool's rate is its median over the rounds.
		for round := 0; round < rounds; round++ {
			for k := range tools {
				tool := tools[(i+round+k)%len(tools)]
				if ctx.Err() != nil {
					return ctx.Err()
				}
				fmt.Fprintf(stderr, "C=%d round %d/%d %s for %v\n", c, round+1, rounds, tool, slice)
				var r float64
				switch tool {
				case toolEngine:
					if prof != nil && c == o.ladder[len(o.ladder)-1] {
						pprof.StartCPUProfile(prof)
					}
					r, err = runEngine(ctx, ctr, c, slice, eng)
					if prof != nil && c == o.ladder[len(o.ladder)-1] {
						pprof.StopCPUProfile()
						prof = nil // one profile: the first engine run at the largest concurrency
					}
				case toolWrk:
					if contains(missing, tool) {
						continue
					}
					r, err = runWrk(ctx, ctr.URL, c, slice)
				case toolHey:
					if contains(missing, tool) {
						continue
					}
					r, err = runHey(ctx, ctr.URL, c, slice)
				case toolVegeta:
					r, err = runVegeta(ctx, ctr.URL, c, slice)
				}
				if err != nil {
					//lint:ignore ST1005 C is the concurrency's symbol (C=10), as in every row of BENCHMARKS.md
					return fmt.Errorf("C=%d %s: %w", c, tool, err)
				}
				perTool[tool] = append(perTool[tool], r)
				time.Sleep(200 * time.Millisecond) // let closed connections drain
			}
		}
		for t, rs := range perTool {
			s.rate[t] = harness.Percentile(rs, 50)
		}
		s.engineRequests, s.engineErrors, s.serverLogs = len(eng.client)+eng.errors, eng.errors, len(eng.server)
		s.clientP50, s.clientP99 = harness.Percentile(eng.client, 50), harness.Percentile(eng.client, 99)
		s.serverP50, s.serverP99 = harness.Percentile(eng.server, 50), harness.Percentile(eng.server, 99)
		s.addedP50, s.addedP99 = s.clientP50-s.serverP50, s.clientP99-s.serverP99
		fmt.Fprintf(stderr, "C=%d rates %v, engine added p50 %.3f ms p99 %.3f ms\n", c, s.rate, s.addedP50, s.addedP99)
		steps = append(steps, s)
	}
	r := buildRow(o, steps, missing, fdLimit, workers, started)
	if err := charts(o.Out, steps); err != nil {
		return err
	}
	return harness.WriteRow(stdout, o.Out, r)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// timed wraps a transport and keeps each request's full-response time, per worker (no lock on the path).
type timed struct {
	inner bench.Transport
	lat   [][]float64
	errs  []int
}

func (t *timed) Name() string { return t.inner.Name() }

func (t *timed) Worker(i int) (bench.Sender, error) {
	s, err := t.inner.Worker(i)
	if err != nil {
		return nil, err
	}
	return &timedSender{inner: s, t: t, i: i}, nil
}

type timedSender struct {
	inner bench.Sender
	t     *timed
	i     int
}

func (s *timedSender) Send(ctx context.Context, text string) (bench.StreamResult, error) {
	res, err := s.inner.Send(ctx, text)
	if err != nil {
		s.t.errs[s.i]++
	} else {
		s.t.lat[s.i] = append(s.t.lat[s.i], float64(res.End.Sub(res.Sent))/float64(time.Millisecond))
	}
	return res, err
}

// engineData collects the engine's runs at one concurrency.
type engineData struct {
	client, server []float64
	errors         int
}

// runEngine runs one closed-loop step of the load engine and returns its achieved rate; it adds the
// requests' full-response times and the container's total_ms of the same requests to e.
func runEngine(ctx context.Context, ctr *harness.Container, c int, d time.Duration, e *engineData) (float64, error) {
	corpus, err := bench.NewCorpus("loadengine", []string{text})
	if err != nil {
		return 0, err
	}
	tr := &timed{inner: bench.NewHTTP(ctr.URL), lat: make([][]float64, c), errs: make([]int, c)}
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure = 0, d, d
	cfg.RequestTimeout, cfg.Grace = 10*time.Second, 10*time.Second
	cfg.SLO, cfg.MinRequests = time.Second, 1
	cfg.Transport, cfg.Corpus, cfg.RunID = tr, corpus, "loadengine"
	before := ctr.LogCount()
	res, err := bench.RunStep(ctx, cfg, c)
	if err != nil {
		return 0, err
	}
	n := 0
	for i := range tr.lat {
		e.client = append(e.client, tr.lat[i]...)
		e.errors += tr.errs[i]
		n += len(tr.lat[i]) + tr.errs[i]
	}
	if got := ctr.WaitLogs(before + n); got < before+n {
		return 0, fmt.Errorf("the container logged %d of the engine's %d requests within 5s", got-before, n)
	}
	for _, l := range ctr.Logs(before)[:n] {
		if l.Outcome == "ok" {
			e.server = append(e.server, l.TotalMs)
		}
	}
	return res.AchievedRPS, nil
}

var rpsRE = regexp.MustCompile(`Requests/sec:\s+([0-9.]+)`)

func threads(c int) int {
	return max(1, min(c, runtime.NumCPU()))
}

func runWrk(ctx context.Context, url string, c int, d time.Duration) (float64, error) {
	script, err := os.CreateTemp("", "loadengine-*.lua")
	if err != nil {
		return 0, err
	}
	defer os.Remove(script.Name())
	fmt.Fprintf(script, "wrk.method = \"POST\"\nwrk.body = %q\nwrk.headers[\"Content-Type\"] = \"application/json\"\nwrk.headers[\"Accept\"] = \"audio/wav\"\n", `{"text":"`+text+`"}`)
	script.Close()
	out, err := peer(ctx, d, "wrk", "--timeout", "10s", "-t", strconv.Itoa(threads(c)), "-c", strconv.Itoa(c), "-d", secs(d), "-s", script.Name(), url+"/invocations")
	if err != nil {
		return 0, err
	}
	// Socket errors (a timeout, a reset) are wrk's to report: its rate already excludes them.
	if strings.Contains(out, "Non-2xx") {
		return 0, fmt.Errorf("wrk saw errors:\n%s", out)
	}
	return parseRate("wrk", out)
}

func runHey(ctx context.Context, url string, c int, d time.Duration) (float64, error) {
	out, err := peer(ctx, d, "hey", "-z", d.String(), "-c", strconv.Itoa(c), "-m", "POST", "-T", "application/json",
		"-H", "Accept: audio/wav", "-d", `{"text":"`+text+`"}`, "-disable-compression", url+"/invocations")
	if err != nil {
		return 0, err
	}
	if m := regexp.MustCompile(`\[(\d+)\]\s+\d+ responses`).FindAllStringSubmatch(out, -1); len(m) != 1 || m[0][1] != "200" {
		return 0, fmt.Errorf("hey saw answers other than 200:\n%s", out)
	}
	return parseRate("hey", out)
}

func secs(d time.Duration) string { return strconv.Itoa(int(math.Ceil(d.Seconds()))) + "s" }

func peer(ctx context.Context, d time.Duration, name string, args ...string) (string, error) {
	cctx, cancel := context.WithTimeout(ctx, d+30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(cctx, name, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

func parseRate(tool, out string) (float64, error) {
	m := rpsRE.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("%s printed no Requests/sec line:\n%s", tool, out)
	}
	return strconv.ParseFloat(m[1], 64)
}

// runVegeta runs vegeta's attacker as a closed loop: rate 0 (as fast as possible) with exactly c workers.
func runVegeta(ctx context.Context, url string, c int, d time.Duration) (float64, error) {
	tgt := vegeta.NewStaticTargeter(vegeta.Target{Method: "POST", URL: url + "/invocations", Body: []byte(`{"text":"` + text + `"}`),
		Header: map[string][]string{"Content-Type": {"application/json"}, "Accept": {"audio/wav"}}})
	a := vegeta.NewAttacker(vegeta.Workers(uint64(c)), vegeta.MaxWorkers(uint64(c)), vegeta.Connections(c),
		vegeta.MaxConnections(c), vegeta.KeepAlive(true), vegeta.Timeout(10*time.Second))
	var ok, bad int
	var first, last time.Time
	for res := range a.Attack(tgt, vegeta.Rate{Freq: 0}, d, "loadengine") {
		if ctx.Err() != nil {
			a.Stop()
		}
		if res.Code != 200 {
			bad++
			continue
		}
		ok++
		if first.IsZero() || res.Timestamp.Before(first) {
			first = res.Timestamp
		}
		if e := res.End(); e.After(last) {
			last = e
		}
	}
	if bad > 0 {
		return 0, fmt.Errorf("vegeta: %d of %d requests failed", bad, ok+bad)
	}
	if ok == 0 || !last.After(first) {
		return 0, errors.New("vegeta: no successful request")
	}
	return float64(ok) / last.Sub(first).Seconds(), nil
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func buildRow(o options, steps []step, missing []string, fdLimit uint64, workers int, started time.Time) row.Row {
	cmd := "go run ./perf/loadengine"
	if o.Smoke {
		cmd += " -smoke"
	}
	r := row.Row{
		Schema: row.SchemaVersion, N: 1, Name: "load-engine", Title: "Load engine vs wrk, hey and vegeta", Smoke: o.Smoke, Command: cmd,
		Machine: row.CurrentMachine(), Date: started, Duration: row.Of(time.Since(started)), Fixed: fixed,
		Summary: fmt.Sprintf("Each tool drives the calibration container (`ENGINE=calibration CALIBRATION_SEGMENT_MS=0`, zero compute; "+
			"`QUEUE_MAX_DEPTH=0`, `ENGINE_WORKERS=%d`) over loopback in a closed loop for %v at each concurrency, one tool after the other "+
			"(in 3 interleaved rounds, order rotated; each rate is the median of its rounds), every request the same one-segment text. The rate is successful requests per second as each tool "+
			"reports it (vegeta: rate 0 with exactly C workers, its closed-loop mode). Added latency is the engine's full-response time "+
			"(send to end of stream) minus the container's own `total_ms` (request log), compared percentile by percentile.", workers, o.Duration),
	}
	r.Machine.FDLimit = fdLimit
	rates := row.Table{Title: "Achieved request rate (requests/s) and ratio to wrk", Columns: []string{"C", "engine", "wrk", "hey", "vegeta", "engine / wrk"}}
	lat := row.Table{Title: "Engine latency vs the container's own (ms)", Columns: []string{"C", "requests", "client p50", "server p50", "added p50", "client p99", "server p99", "added p99"}}
	minRatio, minAt := math.Inf(1), 0
	for _, s := range steps {
		cell := func(t string) string {
			if v, ok := s.rate[t]; ok {
				return f1(v)
			}
			return "not installed"
		}
		ratio := "-"
		if w, ok := s.rate[toolWrk]; ok && w > 0 {
			q := s.rate[toolEngine] / w
			ratio = strconv.FormatFloat(q, 'f', 2, 64) + "x"
			if q < minRatio {
				minRatio, minAt = q, s.c
			}
		}
		rates.Rows = append(rates.Rows, []string{strconv.Itoa(s.c), cell(toolEngine), cell(toolWrk), cell(toolHey), cell(toolVegeta), ratio})
		lat.Rows = append(lat.Rows, []string{strconv.Itoa(s.c), strconv.Itoa(s.engineRequests), f3(s.clientP50), f3(s.serverP50), f3(s.addedP50), f3(s.clientP99), f3(s.serverP99), f3(s.addedP99)})
	}
	r.Tables = []row.Table{rates, lat}
	g1 := row.Goal{Text: "request rate >= 0.9x wrk's at every C"}
	switch {
	case contains(missing, "wrk"):
		g1.Verdict, g1.Why = row.NotMeasured, "wrk is not installed: run scripts/apt-install-missing.sh wrk"
	default:
		g1.Measured = fmt.Sprintf("lowest %.2fx, at C=%d", minRatio, minAt)
		g1.Verdict = row.Verdict(minRatio >= 0.9)
		if minRatio < 0.9 {
			g1.Why = fmt.Sprintf("at C=%d the engine reached %.2fx wrk's rate: wrk is a C event loop that reads and discards each response, while the engine (Go, net/http) also times every audio chunk, keeps a record and judges the step; on a shared %d-core machine client and server compete for the same cores", minAt, minRatio, runtime.NumCPU())
		}
	}
	g2 := row.Goal{Text: "added latency p99 < 1 ms at C = 1000"}
	var at1000 *step
	for i := range steps {
		if steps[i].c == 1000 {
			at1000 = &steps[i]
		}
	}
	if at1000 == nil {
		g2.Verdict, g2.Why = row.NotMeasured, "C=1000 is not in this run's ladder (smoke run)"
	} else {
		g2.Measured = fmt.Sprintf("%.3f ms", at1000.addedP99)
		g2.Verdict = row.Verdict(at1000.addedP99 < 1)
		if at1000.addedP99 >= 1 {
			g2.Why = fmt.Sprintf("with 1000 requests in flight on %d cores shared by client and server, a finished request waits for the client's goroutine to be scheduled and for the kernel to deliver its last bytes; that wait is outside the container's total_ms, so it is counted as added", runtime.NumCPU())
		}
	}
	r.Goals = []row.Goal{g1, g2}
	r.Figures = []row.Figure{{File: "1-load-engine-rate.svg", Caption: "Achieved request rate per tool against concurrency (closed loop)"},
		{File: "1-load-engine-added.svg", Caption: "The engine's added latency (client minus container) at p50 and p99"}}
	r.Notes = []string{
		fmt.Sprintf("File-descriptor limit of the measuring process: %d (C=1000 needs about 2 per connection across client and container; the container runs with MAX_CONNECTIONS=8192).", fdLimit),
		"Added latency compares distributions (client percentile minus container percentile over the same run), not request by request.",
	}
	return r
}

func charts(dir string, steps []step) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	rc := harness.Chart{Title: "Closed-loop request rate, calibration container, loopback", XLabel: "concurrency C", YLabel: "requests/s", LogX: true}
	for _, t := range tools {
		var xy []harness.Point
		for _, s := range steps {
			if v, ok := s.rate[t]; ok {
				xy = append(xy, harness.Point{X: float64(s.c), Y: v})
			}
		}
		rc.Series = append(rc.Series, harness.Series{Name: t, Points: xy})
	}
	ac := harness.Chart{Title: "Load engine: client minus container latency", XLabel: "concurrency C", YLabel: "added latency (ms)", LogX: true, Lines: []harness.HLine{{Name: "goal p99 at C=1000 (1 ms)", Y: 1}}}
	var p50, p99 []harness.Point
	for _, s := range steps {
		p50 = append(p50, harness.Point{X: float64(s.c), Y: s.addedP50})
		p99 = append(p99, harness.Point{X: float64(s.c), Y: s.addedP99})
	}
	ac.Series = []harness.Series{{Name: "added p50", Points: p50}, {Name: "added p99", Points: p99}}
	if err := rc.WriteSVG(filepath.Join(dir, "1-load-engine-rate.svg")); err != nil {
		return err
	}
	return ac.WriteSVG(filepath.Join(dir, "1-load-engine-added.svg"))
}
