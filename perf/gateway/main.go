// Command gateway is benchmark row 8: what `speech-infra gateway` adds to the time to first audio
// byte (row 7 is the cost against the limit). One calibration container instance (a fixed 20 ms of
// waiting per segment, enough engine workers that nothing queues) is deployed on an emulator running in this
// process, through the real SDK. The gateway runs as its own process (`speech-infra gateway espeak-ng --local
// --endpoint …`, built from this repository), as on an agent's host. The load engine then drives the same
// endpoint two ways, closed loop, in interleaved rounds at C = 1, 10 and 50: directly with
// InvokeEndpointWithResponseStream (bench.SageMakerStream, one SDK client per worker, as tts-bench does) and
// through the gateway's POST /v1/audio/speech (OpenAI's request, wav). The row is the difference of the two
// TTFAB distributions' percentiles: the gateway's HTTP hop, its reading of the request and its own
// InvokeEndpointWithResponseStream decoding and re-writing each payload part.
//
//	go run ./perf/gateway [-smoke] [-out .cache/bench] [-duration 12s] [-segment-ms 20]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

// text is the request: two segments, so the answer is a stream of several payload parts.
const text = "Hello there. How are you today?"

// rowN is this row's place in BENCHMARKS.md (row 7 is the cost against the limit); chartFile its chart.
const (
	rowN      = 8
	chartFile = "8-gateway.svg"
)

// endpointName is the endpoint (and its model and config) deployed on the private emulator.
const endpointName = "bench-gateway"

// concurrencies are this row's levels.
var concurrencies = []int{1, 10, 50}

// Goal: what the gateway adds to p99 TTFAB at C=10.
const (
	goalC  = 10
	goalMs = 5.0
)

// minP99Samples is how many TTFABs each path needs at a level before its p99 is judged.
const minP99Samples = 200

// gatewayReadyWait bounds how long the gateway takes to answer once started (the private emulator's and the
// deployment's waits are harness's).
const gatewayReadyWait = 2 * time.Minute

func main() {
	harness.Main("gateway bench", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stdout, os.Stderr) })
}

type options struct {
	harness.Common
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("gateway", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.AddCommon(fs, "smallest size (1 s per path and level, one round): checks the program works")
	o.AddDuration(fs, 12*time.Second, time.Second, "how long each path is driven at each level in all (split into 3 rounds)")
	o.AddSegmentMs(fs)
	if err := harness.ParseFlags(fs, args, "every option is a flag"); err != nil {
		return o, err
	}
	if errs := o.Check(); len(errs) > 0 {
		return o, exitcode.Usage(errors.Join(errs...))
	}
	return o, nil
}

// gatewayProc is a running `speech-infra gateway`.
type gatewayProc struct {
	*harness.Process
	url string
	// dir holds its binary and its log (stdout and stderr).
	dir, logPath string
}

// startGateway builds speech-infra from this repository and runs its gateway on a free port against the
// private emulator's endpoint; it returns once GET /v1/models answers 200.
func startGateway(ctx context.Context, stateDir string) (*gatewayProc, error) {
	dir, err := os.MkdirTemp("", "bench-gateway-bin-")
	if err != nil {
		return nil, err
	}
	bin, err := harness.BuildGo(ctx, "", "./cmd/speech-infra", filepath.Join(dir, "speech-infra"))
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("build speech-infra (from the repository root): %w", err)
	}
	port, err := harness.FreePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g := &gatewayProc{url: "http://127.0.0.1:" + strconv.Itoa(port) + "/v1", dir: dir}
	cmd := exec.Command(bin, "gateway", "espeak-ng", "--local", "--state-dir", stateDir, "--endpoint", endpointName,
		"--port", strconv.Itoa(port), "--max-streams", "4096")
	g.logPath = filepath.Join(dir, "gateway.log")
	lf, err := os.Create(g.logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("the gateway's log: %w", err)
	}
	defer lf.Close() // the gateway has its own copy
	cmd.Stdout, cmd.Stderr = lf, lf
	if g.Process, err = harness.StartProcess(ctx, cmd, g.url+"/models", gatewayReadyWait); err != nil {
		err = fmt.Errorf("the gateway: %w:\n%s", err, g.log())
		os.RemoveAll(dir)
		return nil, err
	}
	return g, nil
}

// log is what the gateway has written so far.
func (g *gatewayProc) log() string {
	b, _ := os.ReadFile(g.logPath)
	return string(b)
}

// stop stops the gateway (it lets the requests in flight finish) and removes its binary.
func (g *gatewayProc) stop() {
	g.Stop()
	os.RemoveAll(g.dir)
}

// openAISpeech is a bench.Transport over the gateway's POST /v1/audio/speech with OpenAI's request shape, wav.
// Workers share one net/http client (safe for concurrent use, an idle connection per worker kept).
type openAISpeech struct {
	url    string
	client *http.Client
}

func newOpenAISpeech(url string) *openAISpeech {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns, tr.MaxIdleConnsPerHost, tr.DisableCompression = 0, 4096, true
	return &openAISpeech{url: url, client: &http.Client{Transport: tr}}
}

func (o *openAISpeech) Name() string                     { return "openai-gateway" }
func (o *openAISpeech) Worker(int) (bench.Sender, error) { return o, nil }

// Send posts the request and reads the answer; TTFAB is to the first byte after the 44-byte WAV header, as
// bench's own transports measure it, from just before the request is handed to the client.
func (o *openAISpeech) Send(ctx context.Context, text string) (bench.StreamResult, error) {
	body, _ := json.Marshal(map[string]string{"model": "espeak-ng", "voice": "calibration", "input": text, "response_format": "wav"})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, o.url+"/audio/speech", bytes.NewReader(body))
	if err != nil {
		return bench.StreamResult{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	res := bench.StreamResult{Sent: time.Now()}
	resp, err := o.client.Do(req)
	if err != nil {
		res.End = time.Now()
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		res.End = time.Now()
		return res, &bench.StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(msg))}
	}
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			now := time.Now()
			if res.FirstByte.IsZero() {
				res.FirstByte = now
			}
			res.Bytes += int64(n)
			if res.FirstAudio.IsZero() && res.Bytes > 44 {
				res.FirstAudio = now
			}
		}
		if err != nil {
			res.End = time.Now()
			if errors.Is(err, io.EOF) {
				if res.Bytes <= 44 {
					return res, errors.New("the answer carried no audio")
				}
				res.Format, res.HeaderBytes, res.AudioBytes = bench.FormatWAV, 44, res.Bytes-44
				return res, nil
			}
			return res, err
		}
	}
}

type level struct {
	c                                        int
	dirP50, dirP99, gwP50, gwP99             float64
	addP50, addP99                           float64
	dirResp50, dirResp99, gwResp50, gwResp99 float64
	dirN, gwN                                int
	dirRate, gwRate                          float64
	enoughForP99                             bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	started, loadStart := time.Now().UTC(), harness.LoadAverage()
	harness.RaiseFDLimit()
	bin, err := harness.ContainerBinary(ctx)
	if err != nil {
		return err
	}
	maxC := concurrencies[len(concurrencies)-1]
	workers := 2 * maxC
	pe, err := harness.DeployCalibration(ctx, bin, "bench-gateway-", endpointName, o.SegmentMs, workers, "gateway bench", stderr)
	if err != nil {
		return err
	}
	defer pe.Stop()
	fail := func(err error) error { return pe.Fail(ctx, err) }
	gw, err := startGateway(ctx, pe.StateDir)
	if err != nil {
		return fail(err)
	}
	defer gw.stop()
	fmt.Fprintf(stderr, "gateway bench: the gateway serves %s\n", gw.url)

	paths := []*harness.Path{
		pe.StreamPath("direct InvokeEndpointWithResponseStream", pe.Config),
		{Name: "through the gateway", Transport: newOpenAISpeech(gw.url)},
	}
	rounds := o.Rounds()
	if err := pe.Drive(ctx, paths, concurrencies, rounds, o.Duration, text, stderr, gw.log); err != nil {
		return err
	}
	dir, gwp := paths[0], paths[1]
	var levels []level
	pct := harness.Percentile
	for li, c := range concurrencies {
		l := level{c: c,
			dirP50: pct(dir.TTFAB[li], 50), dirP99: pct(dir.TTFAB[li], 99), gwP50: pct(gwp.TTFAB[li], 50), gwP99: pct(gwp.TTFAB[li], 99),
			dirResp50: pct(dir.Resp[li], 50), dirResp99: pct(dir.Resp[li], 99), gwResp50: pct(gwp.Resp[li], 50), gwResp99: pct(gwp.Resp[li], 99),
			dirN: len(dir.TTFAB[li]), gwN: len(gwp.TTFAB[li]), dirRate: harness.Median(dir.Rates[li]), gwRate: harness.Median(gwp.Rates[li]),
		}
		l.addP50, l.addP99 = l.gwP50-l.dirP50, l.gwP99-l.dirP99
		l.enoughForP99 = l.dirN >= minP99Samples && l.gwN >= minP99Samples
		levels = append(levels, l)
	}
	r := buildRow(o, started, workers, levels, loadStart)
	if err := writeCharts(o.Out, levels); err != nil {
		return err
	}
	r.Duration = row.Of(time.Since(started))
	return harness.WriteRow(stdout, o.Out, r)
}

func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func buildRow(o options, started time.Time, workers int, levels []level, loadStart string) row.Row {
	load := loadStart + " at the start, " + harness.LoadAverage() + " at the end"
	cmd := "go run ./perf/gateway"
	rounds := o.Rounds()
	if o.Smoke {
		cmd += " -smoke"
	}
	added := row.Table{Title: "Added TTFAB, through the gateway minus direct InvokeEndpointWithResponseStream (ms; a percentile of one path's distribution minus the same percentile of the other's)",
		Columns: []string{"C", "added p50", "added p99", "gateway p50", "direct p50", "gateway p99", "direct p99", "requests (gateway / direct)"}}
	detail := row.Table{Title: "Each path (ms; rate in requests/s, median of rounds)",
		Columns: []string{"C", "path", "requests", "rate", "TTFAB p50", "TTFAB p99", "response p50", "response p99"}}
	var figures []string
	for _, l := range levels {
		c := strconv.Itoa(l.c)
		added.Rows = append(added.Rows, []string{c, f3(l.addP50), f3(l.addP99), f3(l.gwP50), f3(l.dirP50), f3(l.gwP99), f3(l.dirP99), strconv.Itoa(l.gwN) + " / " + strconv.Itoa(l.dirN)})
		detail.Rows = append(detail.Rows,
			[]string{c, "direct InvokeEndpointWithResponseStream", strconv.Itoa(l.dirN), strconv.FormatFloat(l.dirRate, 'f', 0, 64), f3(l.dirP50), f3(l.dirP99), f3(l.dirResp50), f3(l.dirResp99)},
			[]string{c, "through the gateway (POST /v1/audio/speech)", strconv.Itoa(l.gwN), strconv.FormatFloat(l.gwRate, 'f', 0, 64), f3(l.gwP50), f3(l.gwP99), f3(l.gwResp50), f3(l.gwResp99)})
		figures = append(figures, fmt.Sprintf("C=%d: p50 %+.2f ms, p99 %+.2f ms", l.c, l.addP50, l.addP99))
	}
	return row.Row{Schema: row.SchemaVersion, N: rowN, Name: "gateway", Title: "The OpenAI gateway's added TTFAB", Smoke: o.Smoke, Command: cmd,
		Machine: row.CurrentMachine(), Date: started,
		Summary: fmt.Sprintf("One calibration container instance (`ENGINE=calibration CALIBRATION_SEGMENT_MS=%d`, `ENGINE_WORKERS=%d`, `QUEUE_MAX_DEPTH=0`) on the local "+
			"emulator, and `speech-infra gateway` in a process of its own in front of it. The load engine drives the endpoint two ways, closed loop at C = 1, 10 and 50 "+
			"in %d interleaved rounds (%v per path and level in all): directly with `InvokeEndpointWithResponseStream` (one SDK client per worker, as tts-bench does) "+
			"and through the gateway's `POST /v1/audio/speech` (OpenAI's request, wav). TTFAB is to the first byte after the WAV header on both. The added TTFAB is "+
			"a percentile of the gateway path's distribution minus the same percentile of the direct one's: one more HTTP hop, the gateway's own signed "+
			"InvokeEndpointWithResponseStream and the re-writing of each payload part. Added TTFAB: %s.",
			o.SegmentMs, workers, rounds, o.Duration, strings.Join(figures, "; ")),
		Goals:   []row.Goal{goal(levels, load)},
		Tables:  []row.Table{added, detail},
		Figures: []row.Figure{{File: chartFile, Caption: "Added TTFAB p50 and p99 (through the gateway minus direct) against C, with the goal"}},
		Notes: []string{
			"Both paths go through the emulator and the same instance; the gateway path adds the gateway process between the client and the emulator. The emulator runs in the measuring process; the gateway is built from this repository (`go build ./cmd/speech-infra`) and run as `speech-infra gateway espeak-ng --local --endpoint bench-gateway`.",
			fmt.Sprintf("The machine's load average (1, 5, 15 min): %s, on %d cores.", load, runtime.NumCPU()),
			fmt.Sprintf("A p99 is judged only with at least %d requests per path at that level.", minP99Samples),
		},
	}
}

func goal(levels []level, load string) row.Goal {
	g := row.Goal{Text: fmt.Sprintf("added TTFAB p99 < %g ms at C=%d", goalMs, goalC)}
	for _, l := range levels {
		if l.c != goalC {
			continue
		}
		g.Measured = fmt.Sprintf("%.2f ms (p50 %.2f ms)", l.addP99, l.addP50)
		switch {
		case !l.enoughForP99:
			g.Verdict = row.NotMeasured
			g.Why = fmt.Sprintf("%d / %d requests at C=%d: fewer than %d per path, too few for a p99 (a smoke run); run `make bench`", l.gwN, l.dirN, l.c, minP99Samples)
		case l.addP99 < goalMs:
			g.Verdict = row.Met
		default:
			g.Verdict = row.Missed
			g.Why = fmt.Sprintf("at C=%d the gateway path's p99 TTFAB is %.1f ms against %.1f ms direct (p50 %+.1f ms): the extra hop's work (a second HTTP exchange, SigV4 signing, event-stream decoding and re-writing) waits for CPU on %d cores shared with the emulator, the container and the other engineers' jobs (load average %s)",
				l.c, l.gwP99, l.dirP99, l.addP50, runtime.NumCPU(), load)
		}
		return g
	}
	g.Verdict, g.Why, g.Measured = row.NotMeasured, fmt.Sprintf("C=%d was not measured", goalC), "-"
	return g
}

func writeCharts(dir string, levels []level) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w: check the path and its permissions", dir, err)
	}
	var a50, a99 []harness.Point
	for _, l := range levels {
		x := float64(l.c)
		a50, a99 = append(a50, harness.Point{X: x, Y: l.addP50}), append(a99, harness.Point{X: x, Y: l.addP99})
	}
	ch := harness.Chart{Title: "What the gateway adds to TTFAB", XLabel: "requests in flight (C)", YLabel: "added TTFAB (ms)", LogX: true,
		Series: []harness.Series{{Name: "added p50", Points: a50}, {Name: "added p99", Points: a99}}, Lines: []harness.HLine{{Name: fmt.Sprintf("goal at C=%d: p99 < %g ms", goalC, goalMs), Y: goalMs}}}
	return ch.WriteSVG(filepath.Join(dir, chartFile))
}
