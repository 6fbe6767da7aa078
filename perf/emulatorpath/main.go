// Command emulatorpath is benchmark row 4: what the local SageMaker emulator's data path adds to
// the time to first audio byte. One calibration container instance (a fixed 20 ms of waiting per segment, no
// CPU work, enough engine workers that nothing queues) is deployed on an emulator running in this process,
// through the real SDK. The load engine then drives the same instance two ways, closed loop, in interleaved
// rounds at C = 1, 10 and 50: through the emulator with InvokeEndpointWithResponseStream (bench.SageMakerStream,
// one SDK client per worker, as tts-bench --transport sagemaker-stream does) and straight to the instance's own
// port (bench.NewHTTP, the URL from emulator.InstanceURLs). The row is the difference of the two TTFAB
// distributions' percentiles: SigV4 signing, the emulator's routing and proxying, and the event-stream encoding
// and decoding.
//
// Every local Q_max is measured through this path, so a large figure would make them all pessimistic.
//
//	go run ./perf/emulatorpath [-smoke] [-out .cache/bench] [-duration 12s] [-segment-ms 20]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"time"

	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

// text is the request: two segments, so the answer is a stream of several payload parts, not one.
const text = "Hello there. How are you today?"

// endpointName is the endpoint (and its model and config) deployed on the private emulator.
const endpointName = "bench-emulator-path"

// concurrencies are this row's levels.
var concurrencies = []int{1, 10, 50}

// Goal: what the emulator adds to p99 TTFAB at C=10 (a typical qmax step on this machine).
const (
	goalC  = 10
	goalMs = 5.0
)

// minP99Samples is how many TTFABs each path needs at a level before its p99 is judged (the 99th percentile of
// fewer is one or two requests).
const minP99Samples = 200

func main() {
	harness.Main("emulatorpath", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stdout, os.Stderr) })
}

type options struct {
	harness.Common
	// cpuProfile, when set, is where a CPU profile of the whole run (client and emulator) is written.
	cpuProfile string
}

func parse(args []string, stderr io.Writer) (options, error) {
	fs := flag.NewFlagSet("emulatorpath", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	o.AddCommon(fs, "smallest size (1 s per path and level, one round): checks the program works")
	o.AddDuration(fs, 12*time.Second, time.Second, "how long each path is driven at each level in all (split into 3 rounds)")
	o.AddSegmentMs(fs)
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the run (the client and the in-process emulator) to this file (go tool pprof)")
	if err := harness.ParseFlags(fs, args, "every option is a flag"); err != nil {
		return o, err
	}
	if errs := o.Check(); len(errs) > 0 {
		return o, exitcode.Usage(errors.Join(errs...))
	}
	return o, nil
}

// level is one concurrency's result.
type level struct {
	c int
	// TTFAB percentiles of each path and their differences (ms); pool is the diagnostic path (the emulator
	// through an SDK client whose idle pool holds a connection per worker).
	emuP50, emuP90, emuP99    float64
	dirP50, dirP90, dirP99    float64
	poolP50, poolP90, poolP99 float64
	addP50, addP99            float64
	poolAddP50, poolAddP99    float64
	poolN                     int
	poolRate                  float64
	// full-response percentiles (ms)
	emuResp50, emuResp99, dirResp50, dirResp99 float64
	// requests measured, and the median of the rounds' rates (requests/s)
	emuN, dirN       int
	emuRate, dirRate float64
	// enoughForP99 is whether both paths have minP99Samples requests
	enoughForP99 bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	started, loadStart := time.Now().UTC(), harness.LoadAverage()
	if o.cpuProfile != "" {
		f, err := os.Create(o.cpuProfile)
		if err != nil {
			return exitcode.Usage(fmt.Errorf("-cpuprofile: %w: give a writable file path", err))
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("start the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	harness.RaiseFDLimit()
	bin, err := harness.ContainerBinary(ctx)
	if err != nil {
		return err
	}
	maxC := concurrencies[len(concurrencies)-1]
	workers := 2 * maxC
	pe, err := harness.DeployCalibration(ctx, bin, "bench-emulatorpath-", endpointName, o.SegmentMs, workers, "emulatorpath", stderr)
	if err != nil {
		return err
	}
	defer pe.Stop()
	fail := func(err error) error { return pe.Fail(ctx, err) }
	urls := pe.InstanceURLs(endpointName)
	if len(urls) != 1 {
		return fail(fmt.Errorf("the endpoint has %d serving instance URLs (%v), want 1: both paths must reach the same instance", len(urls), urls))
	}
	instanceURL := urls[0]
	fmt.Fprintf(stderr, "emulatorpath: the instance serves at %s\n", instanceURL)
	// The diagnostic path: the same configuration with a second, independent client of cloud.HTTPClient (its own
	// connection pool, cloud.IdleConnsPerHost idle connections per host), a control for the client's
	// connection churn: the two through-the-emulator paths should agree.
	pooledCfg := pe.Config
	pooledCfg.HTTPClient = cloud.HTTPClient()
	paths := []*harness.Path{
		pe.StreamPath("through the emulator", pe.Config),
		{Name: "direct to the instance", Transport: bench.NewHTTP(instanceURL)},
		pe.StreamPath("through the emulator, pooled SDK client", pooledCfg),
	}
	rounds := o.Rounds()
	// Interleave warms each path up first, not measured: connections to the emulator, from it to the instance,
	// and the direct ones.
	if err := pe.Drive(ctx, paths, concurrencies, rounds, o.Duration, text, stderr, nil); err != nil {
		return err
	}
	emuP, dirP, poolP := paths[0], paths[1], paths[2]
	var levels []level
	for li, c := range concurrencies {
		pct := harness.Percentile
		l := level{c: c,
			emuP50: pct(emuP.TTFAB[li], 50), emuP90: pct(emuP.TTFAB[li], 90), emuP99: pct(emuP.TTFAB[li], 99),
			dirP50: pct(dirP.TTFAB[li], 50), dirP90: pct(dirP.TTFAB[li], 90), dirP99: pct(dirP.TTFAB[li], 99),
			emuResp50: pct(emuP.Resp[li], 50), emuResp99: pct(emuP.Resp[li], 99),
			dirResp50: pct(dirP.Resp[li], 50), dirResp99: pct(dirP.Resp[li], 99),
			emuN: len(emuP.TTFAB[li]), dirN: len(dirP.TTFAB[li]),
			emuRate: harness.Median(emuP.Rates[li]), dirRate: harness.Median(dirP.Rates[li]),
		}
		l.poolP50, l.poolP90, l.poolP99 = pct(poolP.TTFAB[li], 50), pct(poolP.TTFAB[li], 90), pct(poolP.TTFAB[li], 99)
		l.poolN, l.poolRate = len(poolP.TTFAB[li]), harness.Median(poolP.Rates[li])
		l.addP50, l.addP99 = l.emuP50-l.dirP50, l.emuP99-l.dirP99
		l.poolAddP50, l.poolAddP99 = l.poolP50-l.dirP50, l.poolP99-l.dirP99
		l.enoughForP99 = l.emuN >= minP99Samples && l.dirN >= minP99Samples
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

// buildRow states the figures, the goal and the verdict.
func buildRow(o options, started time.Time, workers int, levels []level, loadStart string) row.Row {
	load := loadStart + " at the start, " + harness.LoadAverage() + " at the end"
	cmd := "go run ./perf/emulatorpath"
	if o.Smoke {
		cmd += " -smoke"
	}
	rounds := o.Rounds()
	added := row.Table{Title: "Added TTFAB, through the emulator minus direct (ms; each a percentile of one path's distribution minus the same percentile of the other's)",
		Columns: []string{"C", "added p50", "added p99", "emulator p50", "direct p50", "emulator p99", "direct p99", "requests (emulator / direct)", "added p50, pooled SDK client", "added p99, pooled SDK client"}}
	detail := row.Table{Title: "Each path (ms; rate in requests/s, median of rounds)",
		Columns: []string{"C", "path", "requests", "rate", "TTFAB p50", "TTFAB p90", "TTFAB p99", "response p50", "response p99"}}
	for _, l := range levels {
		c := strconv.Itoa(l.c)
		added.Rows = append(added.Rows, []string{c, f3(l.addP50), f3(l.addP99), f3(l.emuP50), f3(l.dirP50), f3(l.emuP99), f3(l.dirP99), strconv.Itoa(l.emuN) + " / " + strconv.Itoa(l.dirN), f3(l.poolAddP50), f3(l.poolAddP99)})
		detail.Rows = append(detail.Rows,
			[]string{c, "through the emulator", strconv.Itoa(l.emuN), strconv.FormatFloat(l.emuRate, 'f', 0, 64), f3(l.emuP50), f3(l.emuP90), f3(l.emuP99), f3(l.emuResp50), f3(l.emuResp99)},
			[]string{c, "direct to the instance", strconv.Itoa(l.dirN), strconv.FormatFloat(l.dirRate, 'f', 0, 64), f3(l.dirP50), f3(l.dirP90), f3(l.dirP99), f3(l.dirResp50), f3(l.dirResp99)},
			[]string{c, "through the emulator, pooled SDK client (diagnostic)", strconv.Itoa(l.poolN), strconv.FormatFloat(l.poolRate, 'f', 0, 64), f3(l.poolP50), f3(l.poolP90), f3(l.poolP99), "", ""})
	}
	var figures []string
	for _, l := range levels {
		figures = append(figures, fmt.Sprintf("C=%d: p50 %+.2f ms, p99 %+.2f ms", l.c, l.addP50, l.addP99))
	}
	g := goal(levels, load)
	return row.Row{Schema: row.SchemaVersion, N: 4, Name: "emulator-path", Title: "The emulator's data path", Smoke: o.Smoke, Command: cmd,
		Machine: row.CurrentMachine(), Date: started,
		Summary: fmt.Sprintf("One calibration container instance (`ENGINE=calibration CALIBRATION_SEGMENT_MS=%d`, `ENGINE_WORKERS=%d`, `QUEUE_MAX_DEPTH=0`: a fixed wait "+
			"per segment, no CPU work, nothing queues) deployed on the local emulator through the real SDK. The load engine drives the same instance two ways, "+
			"closed loop at C = 1, 10 and 50 in %d interleaved rounds (%v per path and level in all): through the emulator with `InvokeEndpointWithResponseStream` "+
			"(one SDK client per worker, as `tts-bench --transport sagemaker-stream` does) and straight to the instance's port with HTTP. The added TTFAB is a "+
			"percentile of the emulator path's distribution minus the same percentile of the direct one's: SigV4 signing, the emulator's routing, proxying "+
			"and event-stream encoding, and the client's event-stream decoding. Added TTFAB: %s. A third, diagnostic path goes through the emulator with an SDK "+
			"client of its own, a second `cloud.HTTPClient` with its own connection pool, a control for the client's connection churn: tts-bench's client "+
			"(`cloud.LocalConfig`) keeps `cloud.IdleConnsPerHost` (%d) per host since this row showed the SDK default of %d re-dialing, so the two should agree.",
			o.SegmentMs, workers, rounds, o.Duration, strings.Join(figures, "; "), cloud.IdleConnsPerHost, awshttp.DefaultHTTPTransportMaxIdleConnsPerHost),
		Goals:   []row.Goal{g},
		Tables:  []row.Table{added, detail},
		Figures: []row.Figure{{File: "4-emulator-path.svg", Caption: "Added TTFAB p50 and p99 (through the emulator minus direct) against C, with the goal"}, {File: "4-emulator-path-ttfab.svg", Caption: "TTFAB p50 and p99 of each path against C"}},
		Fixed: []string{"cloud/config.go: `cloud.HTTPClient` and `cloud.LoadConfig` keep `cloud.IdleConnsPerHost` (4096) idle connections per host instead of the SDK " +
			"default of 10. This row's diagnostic path showed that above 10 workers the default closed the extra connections after each response and every next request " +
			"dialed again (on real SageMaker a TLS handshake inside that request's TTFAB, charged to the model's Q_max). Test: `cloud.TestSDKClientsReuseConnectionsAtHighConcurrency`"},
		Notes: []string{
			"Why it matters: every local Q_max (tts-bench qmax against the emulator) is measured through this path, so what it adds to TTFAB is charged to the model; the figure at the level qmax probes says how pessimistic a local Q_max is.",
			"The direct side's URL comes from `Emulator.InstanceURLs` (emulator/inspect.go), the serving instances' own ports; before the run one request each way checks both answers are the same audio.",
			"The emulator runs in the measuring process (as `emulator/emulatortest` runs it), so it shares the client's Go runtime and the machine's cores with the client and the container; `speech-infra emulator` runs it in a process of its own.",
			fmt.Sprintf("The machine's load average (1, 5, 15 min): %s, on %d cores.", load, runtime.NumCPU()),
			churnNote(levels),
			fmt.Sprintf("A p99 is judged only with at least %d requests per path at that level; the direct side's TTFAB is the instance's %d ms of waiting plus the loopback round trip.", minP99Samples, o.SegmentMs),
		},
	}
}

// goal judges the added p99 TTFAB at goalC against goalMs; a miss names what the diagnostic path shows of
// its cause and the machine's load.
func goal(levels []level, load string) row.Goal {
	g := row.Goal{Text: fmt.Sprintf("added TTFAB p99 < %g ms at C=%d (the figure is stated at every C; a large one makes every local Q_max pessimistic)", goalMs, goalC)}
	for _, l := range levels {
		if l.c != goalC {
			continue
		}
		g.Measured = fmt.Sprintf("%.2f ms (p50 %.2f ms)", l.addP99, l.addP50)
		switch {
		case !l.enoughForP99:
			g.Verdict = row.NotMeasured
			g.Why = fmt.Sprintf("%d / %d requests at C=%d: fewer than %d per path, too few for a p99 (a smoke run); run `make bench`", l.emuN, l.dirN, l.c, minP99Samples)
		case l.addP99 < goalMs:
			g.Verdict = row.Met
		default:
			g.Verdict = row.Missed
			if l.poolAddP99 < goalMs {
				g.Why = fmt.Sprintf("at C=%d the emulator path's p99 TTFAB is %.1f ms against %.1f ms direct, but with an SDK client that keeps an idle connection per worker "+
					"the added p99 is %.1f ms: the client's connection churn makes the difference, not the emulator (tts-bench's client keeps cloud.IdleConnsPerHost = %d "+
					"idle connections per host, so look for what else closes its connections; load average %s on %d cores)", l.c, l.emuP99, l.dirP99, l.poolAddP99, cloud.IdleConnsPerHost, load, runtime.NumCPU())
				break
			}
			g.Why = fmt.Sprintf("at C=%d the emulator path's p99 TTFAB is %.1f ms against %.1f ms direct. With an SDK client that keeps an idle connection per worker "+
				"the added p99 is %.1f ms (p50 %.1f ms), so connection churn in the client is not the cause at this level; the rest is the path's extra work per request "+
				"(SigV4 signing, a second HTTP hop through the emulator's router and proxy, event-stream framing encoded and decoded) waiting for CPU on %d cores shared "+
				"with the other engineers' jobs (load average %s): every extra wake-up of a goroutine or process waits its turn, and the p99 collects those waits",
				l.c, l.emuP99, l.dirP99, l.poolAddP99, l.poolAddP50, runtime.NumCPU(), load)
		}
		return g
	}
	g.Verdict, g.Why, g.Measured = row.NotMeasured, fmt.Sprintf("C=%d was not measured", goalC), "-"
	return g
}

// writeCharts draws the added percentiles against C with the goal, and each path's percentiles.
func writeCharts(dir string, levels []level) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w: check the path and its permissions", dir, err)
	}
	var a50, a99, p50, p99, e50, e99, d50, d99 []harness.Point
	for _, l := range levels {
		x := float64(l.c)
		a50, a99 = append(a50, harness.Point{X: x, Y: l.addP50}), append(a99, harness.Point{X: x, Y: l.addP99})
		p50, p99 = append(p50, harness.Point{X: x, Y: l.poolAddP50}), append(p99, harness.Point{X: x, Y: l.poolAddP99})
		e50, e99 = append(e50, harness.Point{X: x, Y: l.emuP50}), append(e99, harness.Point{X: x, Y: l.emuP99})
		d50, d99 = append(d50, harness.Point{X: x, Y: l.dirP50}), append(d99, harness.Point{X: x, Y: l.dirP99})
	}
	addedChart := harness.Chart{Title: "What the emulator adds to TTFAB", XLabel: "requests in flight (C)", YLabel: "added TTFAB (ms)", LogX: true,
		Series: []harness.Series{{Name: "added p50", Points: a50}, {Name: "added p99", Points: a99}, {Name: "added p50, pooled SDK client", Points: p50}, {Name: "added p99, pooled SDK client", Points: p99}}, Lines: []harness.HLine{{Name: fmt.Sprintf("goal at C=%d: p99 < %g ms", goalC, goalMs), Y: goalMs}}}
	if err := addedChart.WriteSVG(filepath.Join(dir, "4-emulator-path.svg")); err != nil {
		return err
	}
	pathsChart := harness.Chart{Title: "TTFAB through the emulator and direct to the same instance", XLabel: "requests in flight (C)", YLabel: "TTFAB (ms)", LogX: true,
		Series: []harness.Series{{Name: "emulator p50", Points: e50}, {Name: "emulator p99", Points: e99}, {Name: "direct p50", Points: d50}, {Name: "direct p99", Points: d99}}}
	return pathsChart.WriteSVG(filepath.Join(dir, "4-emulator-path-ttfab.svg"))
}

// churnNote states, at the highest level, the emulator path with tts-bench's client against the same path with
// the separately pooled client: since cloud.IdleConnsPerHost they should agree.
func churnNote(levels []level) string {
	l := levels[len(levels)-1]
	return fmt.Sprintf("At C=%d, more workers than the SDK default of %d idle connections per host: through the emulator with tts-bench's client %.0f requests/s "+
		"and TTFAB p50 %.1f ms, with the separately pooled client %.0f requests/s and p50 %.1f ms, direct %.0f requests/s and p50 %.1f ms. tts-bench's client "+
		"keeps cloud.IdleConnsPerHost (%d) idle connections per host, so it does not dial again per request above %d workers as the SDK default did "+
		"(against real SageMaker a TLS handshake each time).",
		l.c, awshttp.DefaultHTTPTransportMaxIdleConnsPerHost, l.emuRate, l.emuP50, l.poolRate, l.poolP50, l.dirRate, l.dirP50, cloud.IdleConnsPerHost, awshttp.DefaultHTTPTransportMaxIdleConnsPerHost)
}
