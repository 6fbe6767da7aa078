// Command synth measures row 5 of BENCHMARKS.md: `cdk synth`, warm, of all stacks of one model,
// with the app as cdk.json has it (`go run .`) against a prebuilt app binary (`cdk synth --app <binary>`).
// Both run after a discarded warm-up synth (Go build cache and node modules warm), interleaved so that the
// machine's noise falls on both alike; the figure is the median.
//
//	go run ./perf/synth          5 runs of each
//	go run ./perf/synth -smoke   1 run of each, no warm-up: checks the program, judges nothing
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/speech-infra/speech-infra/internal/containerbin"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

const (
	rowN    = 5
	rowName = "cdk-synth"
	// goal is the bound for a warm synth of all stacks of one model.
	goal = 5 * time.Second
)

func main() {
	harness.Main("bench synth", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stderr) })
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("synth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common harness.Common
	common.AddCommon(fs, "one run of each: checks the program still produces its row")
	model := fs.String("model", "kokoro-82m", "the model whose stacks are synthesized")
	if err := harness.ParseFlags(fs, args, "this program takes flags only (-smoke, -out, -model)"); err != nil {
		return err
	}
	if errs := common.Check(); len(errs) > 0 {
		return exitcode.Usage(errors.Join(errs...))
	}
	runs := 5
	if common.Smoke {
		runs = 1
	}
	root, err := containerbin.RepoRoot()
	if err != nil {
		return err
	}
	var cdkJSON struct {
		App string `json:"app"`
	}
	data, err := os.ReadFile(filepath.Join(root, "cdk.json"))
	if err != nil {
		return fmt.Errorf("read cdk.json: %w", err)
	}
	if err := json.Unmarshal(data, &cdkJSON); err != nil || cdkJSON.App == "" {
		return fmt.Errorf("cdk.json: no \"app\" (%v): restore the repository's cdk.json", err)
	}
	work, err := filepath.Abs(filepath.Join(common.Out, strconv.Itoa(rowN)+"-"+rowName))
	if err != nil {
		return err
	}
	bin, err := harness.BuildGo(ctx, root, ".", filepath.Join(work, "speech-infra-cdk"))
	if err != nil {
		return err
	}
	started := time.Now().UTC()
	env := []string{"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20", "CDK_DISABLE_VERSION_CHECK=1"}
	synth := func(app string) (time.Duration, error) {
		out := filepath.Join(work, "cdk.out")
		os.RemoveAll(out)
		rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
		defer cancel()
		res, err := harness.Run(rctx, root, env, "npx", "--no-install", "cdk", "synth", "-q", "--app", app, "-c", "model="+*model, "-o", out)
		if err != nil {
			return 0, fmt.Errorf("cdk synth --app %q: %w\n%s", app, err, res.Stderr)
		}
		if m, _ := filepath.Glob(filepath.Join(out, "*.template.json")); len(m) < 2 {
			return 0, fmt.Errorf("cdk synth --app %q wrote %d templates, want every stack of %s", app, len(m), *model)
		}
		return res.Wall, nil
	}
	apps := []struct{ name, app string }{{"cdk.json's app (" + cdkJSON.App + ")", cdkJSON.App}, {"prebuilt binary", bin}}
	for _, a := range apps { // warm-up, discarded (not in a smoke run: it only checks the program)
		if common.Smoke {
			break
		}
		if _, err := synth(a.app); err != nil {
			return err
		}
	}
	walls := make([][]float64, len(apps))
	for i := 0; i < runs; i++ {
		for j, a := range apps {
			d, err := synth(a.app)
			if err != nil {
				return err
			}
			walls[j] = append(walls[j], d.Seconds())
			fmt.Fprintf(stderr, "bench synth: %s: %.2f s\n", a.name, d.Seconds())
		}
	}
	med := []float64{harness.Median(walls[0]), harness.Median(walls[1])}
	rw := row.Row{Schema: row.SchemaVersion, N: rowN, Name: rowName, Title: "`cdk synth`, warm", Smoke: common.Smoke, Machine: row.CurrentMachine(), Date: started,
		Command: "go run ./perf/synth" + map[bool]string{true: " -smoke", false: ""}[common.Smoke],
		Summary: fmt.Sprintf("`npx cdk synth -q -c model=%s` (every stack of one model: the foundation stack and the endpoint stack), warm: after one discarded synth of each, %d interleaved runs of the app as cdk.json has it and of a prebuilt app binary (`go build -o speech-infra-cdk .`, `cdk synth --app <binary>`); median wall time.", *model, runs),
		Notes: []string{"A shared, noisy machine: other work ran beside these measurements; the runs are interleaved so noise falls on both alike.",
			"Most of a synth is the CDK toolkit and the jsii runtime (node), not the Go build: the prebuilt binary saves only `go run`'s link and cache check."},
		Tables: []row.Table{{Title: "cdk synth wall time (s)", Columns: []string{"app", "median", "runs"}, Rows: [][]string{
			{apps[0].name, f2(med[0]), joinF(walls[0])}, {apps[1].name, f2(med[1]), joinF(walls[1])}}}},
	}
	g := row.Goal{Text: "≤ 5 s for all stacks of one model (warm, with cdk.json's app)", Measured: fmt.Sprintf("%s s median (prebuilt binary %s s)", f2(med[0]), f2(med[1]))}
	switch {
	case common.Smoke:
		g.Verdict, g.Why = row.NotMeasured, "smoke run: one run of each is not a median; run `make bench`"
	case med[0] <= goal.Seconds():
		g.Verdict = row.Met
	default:
		g.Verdict, g.Why = row.Missed, fmt.Sprintf("the toolkit and jsii (node) dominate: even the prebuilt binary takes %s s, so switching cdk.json to it would not reach 5 s on this machine", f2(med[1]))
		if med[1] <= goal.Seconds() {
			g.Why = "the prebuilt binary meets it; cdk.json still runs `go run .`"
		}
	}
	rw.Goals = []row.Goal{g}
	f := strconv.Itoa(rowN) + "-" + rowName + ".svg"
	if err := (harness.Bars{Title: "cdk synth, warm (median)", YLabel: "wall (s)", Labels: []string{"cdk.json's app", "prebuilt binary"}, Names: []string{"median"}, Values: [][]float64{med}, Lines: []harness.HLine{{Name: "goal 5 s", Y: goal.Seconds()}}}).WriteSVG(filepath.Join(common.Out, f)); err != nil {
		return err
	}
	rw.Figures = []row.Figure{{File: f, Caption: "median warm synth time of all stacks of one model, against the 5-s goal"}}
	rw.Duration = row.Of(time.Since(started))
	p, err := row.Write(common.Out, rw)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench synth: wrote %s\n", p)
	return nil
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

func joinF(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += ", "
		}
		s += f2(x)
	}
	return s
}
