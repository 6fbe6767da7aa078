// Command cost is benchmark row 7: cost against the limit. For two instance profiles of Kokoro-82M on
// ml.g5.xlarge it builds a plan, then replays the same traces — a diurnal day from trough to peak, growth by
// the surge ratio per T_plan up to the peak and back, and a spike by the surge ratio — through the plan, the
// oracle (ceil(rate ÷ safe rate) instances at every moment, zero start-up: the physical limit of any reactive
// fleet), the original's thresholds (docs/design.md, "The original": 37.5/25 concurrency, fleet 1–9), target
// tracking on InvocationsPerInstance at 70% of the measured maximum rate, and a fixed fleet for the peak.
// Every configuration of one trace is simulated by capacity.Compare (tts-bench simulate's comparison) on the
// one instance model the plan holds (docs/design.md, "One instance model"); this program re-implements no
// rule.
//
// The profiles:
//
//   - published: the original proof of value's published figures (Q_max 50, 16.3 rps: 1 ÷ 61.3 ms, T_total
//     260.2 s), through capacity.FromWhatIf, whose instance model is loadmodel.Approximate's M/M/1 queue marked
//     NOT MEASURED;
//   - twin: the demo's twin (models/kokoro-82m-twin.json: the calibration engine waiting the published 61.3 ms
//     per request on one slot) measured here: `tts-bench qmax` with its rate staircase and `tts-bench ttotal`
//     against the local emulator running the twin with the kokoro-g5 start-up profile, then capacity.FromArtifacts
//     (the instance model from capacity's QMax.InstanceModel).
//
// It writes .cache/bench/7-cost.json, its charts, and under .cache/bench/7-cost/ the measured artifacts, both
// plans and every comparison as JSON.
//
//	go run ./perf/cost          full size (about 15 minutes: the twin starts at AWS's pace)
//	go run ./perf/cost -smoke   short traces and a short twin measurement at time scale 50 (about two minutes)
//	go run ./perf/cost -twin .cache/bench/7-cost/twin/artifacts/kokoro-82m-twin   re-analyse an earlier measurement
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/containerbin"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/internal/twinrun"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

const (
	rowN    = 7
	rowName = "cost"
	// twinModel is the catalog id of the demo's twin; emulatorProfile the start-up profile its emulator runs.
	twinModel       = "kokoro-82m-twin"
	emulatorProfile = "kokoro-g5"
	// cleanupTimeout bounds the destroy and the emulator stop at the end.
	cleanupTimeout = 2 * time.Minute
)

// size is one run's extent.
type size struct {
	// timeScale runs the emulator's kokoro-g5 start-up profile this many times faster than AWS (1: as AWS).
	timeScale float64
	// qmaxArgs and ttotalArgs shape the twin's measurement.
	qmaxArgs, ttotalArgs []string
	// dayDuration is the diurnal trace's length (and period); spikeDuration and spikeWidth the spike's.
	dayDuration, spikeDuration, spikeWidth time.Duration
}

var (
	// full: a closed-loop ladder up to 192 in flight (the container serves first segments first, so TTFAB stays
	// under the SLO far beyond 3000 ms ÷ 61 ms, to about 150; a request at C = 192 lasts about 13 s, hence the
	// 12-s settle; no step between 64 and 192, since the ladder stops at the first failing step and at 128 the
	// playback stall already fails the twin's 0-ms budget while TTFAB does not): 192 is past the SLO, the step ttotal's default probe takes (a probe that never
	// exceeds the SLO before the new instance serves measures no recovery), with a warm-up its requests end in;
	// windows long enough for qmax's 100 requests a step at 0.3 of about 16 rps, and the start-up at AWS's pace.
	full = size{timeScale: 1,
		qmaxArgs: []string{"--ladder", "1,32,64,192", "--max-concurrency", "192", "--settle", "12s", "--hold", "22s", "--measure-window", "10s",
			"--rate-fractions", "0.3,0.5,0.7,0.85,1,1.1", "--rate-settle", "5s", "--rate-hold", "25s", "--rate-measure-window", "22s"},
		ttotalArgs:  []string{"--warmup", "35s", "--window", "20s", "--min-samples", "20", "--max-wait", "12m"},
		dayDuration: 24 * time.Hour, spikeDuration: 3 * time.Hour, spikeWidth: 30 * time.Minute}
	// smoke: three closed-loop steps (192 past the SLO) and three rate steps of a few seconds (30 requests a
	// step, not qmax's 100), the start-up 50 times faster than AWS, and the demo's T_total run (twinrun).
	smoke = size{timeScale: 50,
		qmaxArgs: []string{"--ladder", "1,64,192", "--max-concurrency", "192", "--settle", "1s", "--hold", "6s", "--measure-window", "5s", "--min-requests", "30",
			"--rate-fractions", "0.5,0.8,1.05", "--rate-refine", "0", "--rate-settle", "1s", "--rate-hold", "6s", "--rate-measure-window", "5s"},
		ttotalArgs:  twinrun.TTotalArgs,
		dayDuration: 6 * time.Hour, spikeDuration: time.Hour, spikeWidth: 10 * time.Minute}
)

func main() {
	harness.Main("bench cost", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stderr) })
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("cost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common harness.Common
	common.AddCommon(fs, "short traces and a short twin measurement at time scale 50: checks the program still produces its row")
	containerBin := fs.String("container", "", "the inference container binary (default $SPEECH_CONTAINER_BIN, else built into .cache/bench)")
	twinDir := fs.String("twin", "", "analyse the twin's qmax.json and ttotal.json in this directory (an earlier run's .cache/bench/7-cost/twin/artifacts/kokoro-82m-twin) instead of measuring; the row says so")
	twinScale := fs.Float64("twin-time-scale", 0, "with -twin: the emulator time scale the artifacts' ttotal ran at (default: 1, or 50 with -smoke)")
	if err := harness.ParseFlags(fs, args, "this program takes flags only (-smoke, -out, -container, -twin, -twin-time-scale)"); err != nil {
		return err
	}
	if errs := common.Check(); len(errs) > 0 {
		return exitcode.Usage(errors.Join(errs...))
	}
	sz := full
	if common.Smoke {
		sz = smoke
	}
	if *twinScale != 0 {
		if *twinDir == "" {
			return exitcode.Usage(errors.New("-twin-time-scale goes with -twin"))
		}
		sz.timeScale = *twinScale
	}
	// Artifacts to re-analyse are read before the row's directory is wiped (they may lie in it).
	var earlier map[string][]byte
	if *twinDir != "" {
		earlier = map[string][]byte{}
		for _, f := range []string{capacity.QMaxFile, capacity.TTotalFile} {
			data, err := os.ReadFile(filepath.Join(*twinDir, f))
			if err != nil {
				return exitcode.Usage(fmt.Errorf("-twin: %w", err))
			}
			earlier[f] = data
		}
	}
	started := time.Now().UTC()
	var err error
	if *containerBin == "" {
		if *containerBin, err = harness.ContainerBinary(ctx); err != nil {
			return err
		}
	}
	if *containerBin, err = filepath.Abs(*containerBin); err != nil {
		return err
	}
	root, err := containerbin.RepoRoot()
	if err != nil {
		return err
	}
	if common.Out, err = filepath.Abs(common.Out); err != nil {
		return err
	}
	work := filepath.Join(common.Out, strconv.Itoa(rowN)+"-"+rowName)
	if *twinDir == "" { // a re-analysis keeps the measurement's directory and its log
		if err := os.RemoveAll(work); err != nil {
			return fmt.Errorf("wipe %s: %w", work, err)
		}
	}

	// The twin: a real measurement on the emulator (or an earlier one's artifacts, with -twin).
	var tw twinRun
	if earlier != nil {
		art := filepath.Join(work, "twin", "artifacts", twinModel)
		if err := os.MkdirAll(art, 0o755); err != nil {
			return err
		}
		for f, data := range earlier {
			if err := atomicfile.WriteFile(filepath.Join(art, f), data, 0o644); err != nil {
				return err
			}
		}
		tw = twinRun{qmax: filepath.Join(art, capacity.QMaxFile), ttotal: filepath.Join(art, capacity.TTotalFile), log: filepath.Join(*twinDir, "..", "..", "commands.log")}
	} else {
		fmt.Fprintf(stderr, "bench cost: measuring the twin (%s) on the local emulator, start-up profile %s at time scale %g\n", twinModel, emulatorProfile, sz.timeScale)
		if tw, err = measureTwin(ctx, root, *containerBin, filepath.Join(work, "twin"), sz, stderr); err != nil {
			return fmt.Errorf("the twin's measurement: %w", err)
		}
	}
	ms, err := capacity.LoadMeasurement(tw.qmax, tw.ttotal)
	if err != nil {
		return err
	}

	res, err := analyse(ms, sz, common.Smoke)
	if err != nil {
		return err
	}
	for _, pr := range res.profiles {
		pdir := filepath.Join(work, pr.key)
		if err := capacity.WriteJSON(filepath.Join(pdir, "plan.json"), pr.plan); err != nil {
			return err
		}
		for i, rep := range pr.reports {
			if err := capacity.WriteJSON(filepath.Join(pdir, "compare-"+res.traceKeys[i]+".json"), rep); err != nil {
				return err
			}
		}
	}
	rw := res.row(sz, common.Smoke)
	rw.Date, rw.Machine = started, row.CurrentMachine()
	rw.Command = "go run ./perf/cost" + map[bool]string{true: " -smoke", false: ""}[common.Smoke]
	if earlier != nil {
		rw.Command += fmt.Sprintf(" -twin %s -twin-time-scale %g", *twinDir, sz.timeScale)
		rw.Notes = append(rw.Notes, fmt.Sprintf("The twin was NOT measured in this run: its artifacts are an earlier run's (%s: qmax run %s, ttotal run %s), re-analysed with -twin; measure afresh with the command without -twin.",
			*twinDir, ms.QMax.RunID, ms.TTotal.RunID))
	} else {
		rw.Notes = append(rw.Notes, fmt.Sprintf("The twin's measurement (qmax run %s, ttotal run %s: artifacts, raw records, charts and the commands' log), both plans and every comparison as JSON are under .cache/bench/%d-%s/. tts-bench qmax took %s, ttotal %s.",
			ms.QMax.RunID, ms.TTotal.RunID, rowN, rowName, tw.qmaxWall.Round(time.Second), tw.ttotalWall.Round(time.Second)))
	}
	if w := toolWarnings(tw.log); len(w) > 0 {
		rw.Notes = append(rw.Notes, "What tts-bench warned about while measuring the twin: "+strings.Join(w, " · "))
	}
	figs, err := res.charts(common.Out)
	if err != nil {
		return err
	}
	rw.Figures = figs
	rw.Duration = row.Of(time.Since(started))
	p, err := row.Write(common.Out, rw)
	if err != nil {
		return err
	}
	for _, g := range rw.Goals {
		fmt.Fprintf(stderr, "bench cost: %s: %s — %s\n", g.Verdict, g.Text, g.Measured)
	}
	fmt.Fprintf(stderr, "bench cost: wrote %s\n", p)
	return nil
}

// twinRun is where the twin's measurement went.
type twinRun struct {
	qmax, ttotal, log    string
	qmaxWall, ttotalWall time.Duration
}

// measureTwin deploys the twin on an emulator of its own (speech-infra deploy --local, as make demo does, on a
// free port and a state directory under dir), measures it with tts-bench qmax (closed-loop staircase, then the
// rate staircase) and tts-bench ttotal, and always destroys the endpoint and stops the emulator before it
// returns.
func measureTwin(ctx context.Context, root, containerBin, dir string, sz size, stderr io.Writer) (tw twinRun, err error) {
	bin := filepath.Join(dir, "bin")
	speechInfra, err := harness.BuildGo(ctx, root, "./cmd/speech-infra", filepath.Join(bin, "speech-infra"))
	if err != nil {
		return tw, err
	}
	ttsBench, err := harness.BuildGo(ctx, root, "./cmd/tts-bench", filepath.Join(bin, "tts-bench"))
	if err != nil {
		return tw, err
	}
	port, err := harness.FreePort()
	if err != nil {
		return tw, err
	}
	state, journals, art := filepath.Join(dir, "state"), filepath.Join(dir, "journals"), filepath.Join(dir, "artifacts", twinModel)
	if err := os.MkdirAll(art, 0o755); err != nil {
		return tw, err
	}
	env := []string{"SPEECH_EMULATOR_PROFILE=" + emulatorProfile, "SPEECH_EMULATOR_TIME_SCALE=" + strconv.FormatFloat(sz.timeScale, 'g', -1, 64),
		"SPEECH_INFRA_STATE_DIR=" + state, "SPEECH_INFRA_PORT=" + strconv.Itoa(port), "SPEECH_CONTAINER_BIN=" + containerBin}
	logf := filepath.Join(dir, "commands.log")
	tw.log = logf
	step := func(ctx context.Context, name string, args ...string) (time.Duration, error) {
		fmt.Fprintf(stderr, "bench cost: $ %s %s\n", filepath.Base(name), strings.Join(args, " "))
		res, err := runLogged(ctx, root, env, logf, name, args...)
		if err != nil {
			return res, fmt.Errorf("%w (log %s)", err, logf)
		}
		return res, nil
	}
	local := []string{"--local", "--state-dir", state}
	deployed := false
	defer func() {
		if !deployed {
			return
		}
		cctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
		defer cancel()
		var errs []error
		if _, cerr := step(cctx, speechInfra, "destroy", twinModel, "--local", "--state-dir", state, "--port", strconv.Itoa(port)); cerr != nil {
			errs = append(errs, cerr)
		}
		if _, cerr := step(cctx, speechInfra, "local", "stop", "--state-dir", state); cerr != nil {
			errs = append(errs, cerr)
		}
		if err == nil && len(errs) > 0 {
			err = fmt.Errorf("clean up the twin's emulator (stop it with %s local stop --state-dir %s): %w", speechInfra, state, errors.Join(errs...))
		}
	}()
	deployed = true
	// No plan exists yet (a --plan that is given must exist): deploy with autoscaling off gives the
	// measurement configuration (no autoscaling, unbounded queue).
	if _, err := step(ctx, speechInfra, "deploy", twinModel, "--local", "--state-dir", state, "--port", strconv.Itoa(port),
		"--autoscaling=false"); err != nil {
		return tw, err
	}
	tw.qmax, tw.ttotal = filepath.Join(art, capacity.QMaxFile), filepath.Join(art, capacity.TTotalFile)
	qargs := append([]string{"qmax", "--model", twinModel, "--output", tw.qmax, "--journal-dir", journals}, sz.qmaxArgs...)
	if tw.qmaxWall, err = step(ctx, ttsBench, append(qargs, local...)...); err != nil {
		return tw, err
	}
	targs := append([]string{"ttotal", "--model", twinModel, "--qmax", tw.qmax, "--output", tw.ttotal, "--journal-dir", journals}, sz.ttotalArgs...)
	if tw.ttotalWall, err = step(ctx, ttsBench, append(targs, local...)...); err != nil {
		return tw, err
	}
	return tw, nil
}

// runLogged runs a command from the repository root (tts-bench digests ./container), appends its output to
// logf, and stops it with SIGINT (tts-bench restores what it froze) when ctx ends.
func runLogged(ctx context.Context, root string, env []string, logf, name string, args ...string) (time.Duration, error) {
	f, err := os.OpenFile(logf, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fmt.Fprintf(f, "\n$ %s %s\n", name, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = root, append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 90 * time.Second
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if err != nil {
		return wall, fmt.Errorf("%s %s: %w: %s", filepath.Base(name), args[0], err, harness.Tail(logf, 3))
	}
	return wall, nil
}

// toolWarnings are the distinct "warning:" lines of the measurement's log (tts-bench's own caveats about its
// steps), without their command prefix; none when the log is missing.
func toolWarnings(logf string) []string {
	data, err := os.ReadFile(logf)
	if err != nil {
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		_, w, ok := strings.Cut(line, "warning: ")
		if !ok || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}
