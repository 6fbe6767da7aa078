package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
	"github.com/urfave/cli/v2"
)

const planDescription = `plan turns the two measurements into autoscaling settings and judges them.

Inputs:
  qmax.json    (tts-bench qmax)   Q_max, the highest concurrency per instance whose p95 time to first audio
                                  byte meets the SLO, and the measured throughput at each concurrency.
  ttotal.json  (tts-bench ttotal) T_total, the time from asking for one more instance until it serves.
  --peak-rps   the highest load the fleet must carry (required), --trough-rps where a surge starts.
  --surge s    load may grow by s within one T_plan; the headroom h = s − 1 sets the thresholds.

Derived (with h = s − 1):
  C_scale_max = (1 − h)·Q_max    scale out above this concurrency per instance (target tracking)
  C_scale_min = (1 − 2h)·Q_max   scale in below this
  T_plan      = T_total + detection buffer
  cooldowns   scale-out clamp(T_plan/2, 10 s, 30 s), scale-in max(300 s, 3·T_plan)
  max fleet   ceil(peak ÷ measured throughput per instance at C_scale_max) — never C ÷ service time
  e.g. Q_max 50, s 1.25 → C_scale_max 37.5, C_scale_min 25, smallest safe minimum 3.

Findings (pass / warn / fail, each with a recommendation): measurement_validity, slo_consistency,
transport_consistency, peak_coverage, scale_in_safety, surge_survival (a step simulation of the scale-out
loop), queue_depth, invocation_timeout. Any fail makes the plan infeasible: exit 1.

The plan is written to --output (default artifacts/<model>/plan.json); the endpoint stack deploys it only if
it is measured, feasible and matches what is deployed.

--what-if explores without measuring: give the numbers the artifacts would hold, as key=value pairs —
q_max, t_total_s, throughput_rps (per instance at C_scale_max) are required; throughput_at_q_max_rps
(default: constant response time up to Q_max), cloudwatch_ratio (default 1), transport and
container_digest are optional. A what-if plan is marked measured: false, is printed but written only
when --output is given, and the deploy gate never accepts it.

Examples:
  tts-bench plan --peak-rps 80
  tts-bench plan --what-if q_max=40,t_total_s=280,throughput_rps=13.6 --peak-rps 80 --trough-rps 10`

func planCommand() *cli.Command {
	return &cli.Command{
		Name:        "plan",
		Usage:       "derive scaling thresholds, cooldowns and fleet bounds from qmax and ttotal, and judge them",
		UsageText:   "tts-bench plan --peak-rps RPS [--model ID] [--qmax PATH] [--ttotal PATH] [options]\n   tts-bench plan --what-if q_max=N,t_total_s=S,throughput_rps=X --peak-rps RPS [options]",
		Description: planDescription,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Value: models.DefaultModel, Usage: "catalog id of the model to plan for"},
			&cli.StringFlag{Name: "qmax", Usage: "qmax artifact (default artifacts/<model>/qmax.json)"},
			&cli.StringFlag{Name: "ttotal", Usage: "ttotal artifact (default artifacts/<model>/ttotal.json)"},
			&cli.Float64Flag{Name: "peak-rps", Usage: "peak load the fleet must carry, requests per second (required)"},
			&cli.Float64Flag{Name: "trough-rps", Usage: "load a surge starts from, requests per second (default: the minimum fleet at C_scale_min)"},
			&cli.Float64Flag{Name: "surge", Usage: "surge ratio s in [1, 1.5): load may grow by s within one T_plan (default: the catalog's)"},
			&cli.Float64Flag{Name: "detection-buffer", Usage: "seconds from a surge until scale-out is asked for (default: the catalog's, 60)"},
			&cli.IntFlag{Name: "min-instances", Usage: "fleet minimum (default: the catalog's)"},
			&cli.IntFlag{Name: "max-instances", Usage: "largest fleet allowed (default: the catalog's)"},
			&cli.StringFlag{Name: "output", Usage: "where to write the plan, atomically (default artifacts/<model>/plan.json; what-if plans only when given)"},
			&cli.StringFlag{Name: "format", Value: "table", Usage: "what to print: table or json"},
			&cli.StringFlag{Name: "what-if", Usage: "plan from assumed numbers instead of artifacts: q_max=N,t_total_s=S,throughput_rps=X[,...]"},
		},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError(fmt.Errorf("%w: see tts-bench plan --help", err))
		},
		Action: runPlan,
	}
}

func runPlan(c *cli.Context) error {
	if c.Args().Present() {
		return usageError(fmt.Errorf("plan takes no arguments, got %q: use flags, see tts-bench plan --help", c.Args().Slice()))
	}
	format := c.String("format")
	if format != "table" && format != "json" {
		return usageError(fmt.Errorf("--format %q is not a format: use table or json", format))
	}
	cat, err := models.Default()
	if err != nil {
		return err
	}
	m, err := cat.Get(c.String("model"))
	if err != nil {
		return usageError(fmt.Errorf("--model: %w", err))
	}
	opts, err := planOptions(c, m)
	if err != nil {
		return usageError(err)
	}

	var p *capacity.Plan
	output := c.String("output")
	if spec := c.String("what-if"); c.IsSet("what-if") {
		if c.IsSet("qmax") || c.IsSet("ttotal") {
			return usageError(errors.New("--what-if replaces the artifacts: drop --qmax and --ttotal, or drop --what-if"))
		}
		w, err := capacity.ParseWhatIf(spec)
		if err != nil {
			return usageError(fmt.Errorf("--what-if %q: %w", spec, err))
		}
		if p, err = capacity.FromWhatIf(m, w, opts); err != nil {
			return usageError(err)
		}
	} else {
		qPath, tPath := c.String("qmax"), c.String("ttotal")
		if qPath == "" {
			qPath = capacity.DefaultQMaxPath(m.ID)
		}
		if tPath == "" {
			tPath = capacity.DefaultTTotalPath(m.ID)
		}
		if err := artifactExists("--qmax", qPath, "tts-bench qmax"); err != nil {
			return err
		}
		if err := artifactExists("--ttotal", tPath, "tts-bench ttotal"); err != nil {
			return err
		}
		ms, err := capacity.LoadMeasurement(qPath, tPath)
		if err != nil {
			return usageError(err)
		}
		if p, err = capacity.FromArtifacts(m, ms, opts); err != nil {
			return usageError(err)
		}
		if output == "" {
			output = capacity.DefaultPlanPath(m.ID)
		}
	}

	if format == "json" {
		data, err := capacity.MarshalArtifact(p)
		if err != nil {
			return err
		}
		if _, err := c.App.Writer.Write(data); err != nil {
			return fmt.Errorf("print plan: %w", err)
		}
	} else if err := writePlanTable(c.App.Writer, p); err != nil {
		return fmt.Errorf("print plan: %w", err)
	}
	if output != "" {
		if err := capacity.WriteJSON(output, p); err != nil {
			return err
		}
		fmt.Fprintf(c.App.ErrWriter, "wrote %s plan to %s\n", p.Verdict, output)
	} else {
		fmt.Fprintln(c.App.ErrWriter, "what-if plan not written: pass --output PATH to keep it (the deploy gate refuses what-if plans)")
	}
	if !p.Feasible() {
		var failed []string
		for _, f := range p.Failed() {
			failed = append(failed, f.Name)
		}
		return checkFailed(fmt.Errorf("plan is infeasible: %s failed: follow the recommendations above and plan again", strings.Join(failed, ", ")))
	}
	return nil
}

// planOptions starts from the catalog's defaults and applies the flags that were set, checking each.
func planOptions(c *cli.Context, m models.Model) (capacity.Options, error) {
	o := capacity.DefaultOptions(m)
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !c.IsSet("peak-rps") {
		bad("--peak-rps is required: give the highest load the fleet must carry in requests per second, e.g. --peak-rps 80")
	} else if o.PeakRPS = c.Float64("peak-rps"); !(o.PeakRPS > 0 && o.PeakRPS <= capacity.MaxRPS) {
		bad("--peak-rps %s: want a request rate in (0, %g] requests per second, e.g. --peak-rps 80", fmtFloat(o.PeakRPS), float64(capacity.MaxRPS))
	}
	if c.IsSet("trough-rps") {
		o.TroughRPS = c.Float64("trough-rps")
		if !(o.TroughRPS > 0 && o.TroughRPS <= capacity.MaxRPS) || (o.PeakRPS > 0 && o.TroughRPS > o.PeakRPS) {
			bad("--trough-rps %s: want a request rate in (0, --peak-rps], or leave it out", fmtFloat(o.TroughRPS))
		}
	}
	if c.IsSet("surge") {
		o.SurgeRatio = c.Float64("surge")
		if !(o.SurgeRatio >= 1 && o.SurgeRatio < 1.5) {
			bad("--surge %s: want a ratio in [1, 1.5), e.g. --surge 1.25 (load may grow 25%% within one T_plan)", fmtFloat(o.SurgeRatio))
		}
	}
	if c.IsSet("detection-buffer") {
		o.DetectionBufferS = c.Float64("detection-buffer")
		if !(o.DetectionBufferS >= 0 && o.DetectionBufferS <= capacity.MaxDetectionBufferS) {
			bad("--detection-buffer %s: want 0 to %d seconds (metric period × evaluation periods + scale-out cooldown, 60 by default)", fmtFloat(o.DetectionBufferS), capacity.MaxDetectionBufferS)
		}
	}
	if c.IsSet("min-instances") {
		if o.MinInstances = c.Int("min-instances"); o.MinInstances < 1 || o.MinInstances > capacity.MaxInstances {
			bad("--min-instances %d: want 1 to %d", o.MinInstances, capacity.MaxInstances)
		}
	}
	if c.IsSet("max-instances") {
		if o.MaxInstances = c.Int("max-instances"); o.MaxInstances < 1 || o.MaxInstances > capacity.MaxInstances {
			bad("--max-instances %d: want 1 to %d", o.MaxInstances, capacity.MaxInstances)
		}
	}
	if o.MinInstances >= 1 && o.MaxInstances >= 1 && o.MinInstances > o.MaxInstances {
		bad("--min-instances %d is above --max-instances %d: lower the minimum or raise the maximum", o.MinInstances, o.MaxInstances)
	}
	return o, errors.Join(errs...)
}

func artifactExists(flag, path, producer string) error {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return usageError(fmt.Errorf("%s %s: no such file: run %s first or pass %s PATH", flag, path, producer, flag))
	}
	if err != nil {
		return usageError(fmt.Errorf("%s %s: %w", flag, path, err))
	}
	return nil
}

func fmtFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }

// writePlanTable prints the plan for humans: inputs, derived values, findings and the verdict.
func writePlanTable(w io.Writer, p *capacity.Plan) error {
	in, d, fp := p.Inputs, p.Derived, p.Fingerprint
	kind := "measured"
	if !p.Measured {
		kind = "WHAT-IF (assumed numbers, measured: false)"
	}
	b := &strings.Builder{}
	fmt.Fprintf(b, "Plan for %s on %s: %s, transport %s, SLO p%d TTFAB ≤ %d ms\n", fp.Model, fp.InstanceType, kind, fp.Transport, fp.SLOPercentile, fp.SLOTTFABMs)
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	row := func(name, value, note string) { fmt.Fprintf(tw, "  %s\t%s\t%s\n", name, value, note) }
	fmt.Fprintln(tw, "\nINPUTS\t\t")
	if p.Measured {
		live := "live"
		if in.DryRun {
			live = "DRY RUN"
		}
		row("qmax artifact", in.QMaxFile, shortDigest(in.QMaxSHA256)+", "+live)
		row("ttotal artifact", in.TTotalFile, shortDigest(in.TTotalSHA256))
		row("container", shortDigest(fp.ContainerDigest), "revision "+fp.ModelRevision)
	}
	row("Q_max", strconv.Itoa(in.QMax), "concurrent requests per instance within the SLO")
	row("T_total", capacity.FormatNumber(in.TTotalS)+" s", "one more instance, asked for until serving")
	row("surge ratio s", fmtFloat(in.SurgeRatio), "load may grow ×s within one T_plan")
	row("detection buffer", capacity.FormatNumber(in.DetectionBufferS)+" s", fmt.Sprintf("metric %d × %d s datapoints + cooldown", in.EvaluationPeriods, in.MetricPeriodS))
	row("load", fmt.Sprintf("peak %s rps", fmtFloat(in.PeakRPS)), fmt.Sprintf("trough %s rps", capacity.FormatNumber(in.TroughRPS)))
	row("fleet bounds", fmt.Sprintf("%d to %d", in.MinInstances, in.MaxInstances), "instances allowed")
	row("queue_max_depth", strconv.Itoa(in.QueueMaxDepth), "catalog shield depth per instance")
	row("cloudwatch ratio", capacity.FormatNumber(in.CloudWatchRatio), "CloudWatch ÷ client concurrency")
	if err := tw.Flush(); err != nil {
		return err
	}
	var curve []string
	for _, pt := range in.Throughput {
		curve = append(curve, fmt.Sprintf("%s@%s", capacity.FormatNumber(pt.RPS), capacity.FormatNumber(pt.Concurrency)))
	}
	fmt.Fprintf(b, "  throughput curve (rps@concurrency, closed loop, per instance): %s\n", strings.Join(curve, " "))
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nDERIVED\t\t")
	row("headroom h", strconv.FormatFloat(d.Headroom, 'g', 10, 64), "s − 1")
	row("C_scale_max", capacity.FormatNumber(d.CScaleMax), "(1 − h)·Q_max: scale out above")
	row("C_scale_min", capacity.FormatNumber(d.CScaleMin), "(1 − 2h)·Q_max: scale in below")
	row("target value", capacity.FormatNumber(d.TargetValue), "C_scale_max × cloudwatch ratio, target tracking")
	row("scale-in threshold", capacity.FormatNumber(d.ScaleInThreshold), "C_scale_min × cloudwatch ratio, scale-in alarm")
	row("T_plan", capacity.FormatNumber(d.TPlanS)+" s", "T_total + detection buffer")
	row("scale-out cooldown", strconv.Itoa(d.ScaleOutCooldownS)+" s", "clamp(T_plan/2, 10, 30)")
	row("scale-in cooldown", strconv.Itoa(d.ScaleInCooldownS)+" s", "max(300, 3·T_plan)")
	row("throughput", capacity.FormatNumber(d.ThroughputRPS)+" rps", "per instance at C_scale_max (at Q_max: "+capacity.FormatNumber(d.ThroughputAtQMaxRPS)+" rps)")
	row("fleet", fmt.Sprintf("%d to %d", d.MinInstances, d.MaxInstances), "max = ceil(peak ÷ throughput)")
	safe := "none"
	if d.SmallestSafeMinInstances > 0 {
		safe = strconv.Itoa(d.SmallestSafeMinInstances)
	}
	row("smallest safe min", safe, "instances, for scale-in safety")
	row("queue depth", strconv.Itoa(d.QueueMaxDepth), "QUEUE_MAX_DEPTH once deployed")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(b, "\nFINDINGS")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, f := range p.Findings {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", f.Status, f.Name, f.Detail)
		if f.Recommendation != "" {
			fmt.Fprintf(tw, "  \t\t→ %s\n", f.Recommendation)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(b, "\nVERDICT  %s\n", p.Verdict)
	_, err := io.WriteString(w, b.String())
	return err
}

func shortDigest(d string) string {
	if len(d) > len("sha256:")+12 {
		return d[:len("sha256:")+12] + "…"
	}
	if d == "" {
		return "(none)"
	}
	return d
}
