package measure

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

// Bounds and names of a comparison of instance types.
const (
	// compareDestroyTimeout bounds the destroy of one measurement endpoint, on a context of its own.
	compareDestroyTimeout = 3 * time.Minute
	// MaxEndpointName is SageMaker's limit on an endpoint name's length.
	MaxEndpointName = 63
	// CompareChartFile is the chart written beside the comparison's report.
	CompareChartFile = "compare.png"
)

// CompareEndpoint is the measurement endpoint of one type: speech-<model>-<type with dots as dashes>.
func CompareEndpoint(modelID, instanceType string) string {
	return "speech-" + modelID + "-" + strings.ReplaceAll(instanceType, ".", "-")
}

// TypePrice is one type's price per instance-hour and where it comes from.
type TypePrice struct {
	USD    float64
	Source string
}

// Compare is one comparison of instance types (docs/design.md, "Instance types side by side"), as tts-bench
// compare's Validate resolved it from the command line: for each type it deploys a measurement endpoint of its
// own, checks drift, measures Q_max and T_total into the type's artifact set, plans for the trace's peak and
// trough, simulates the plan on the trace, and destroys the endpoint.
type Compare struct {
	Model              models.Model
	Types              []string
	Price              map[string]TypePrice
	Trace              simulate.Trace
	PeakRPS, TroughRPS float64
	// Local says the endpoints are the local emulator's: the types run one at a time and deploy its image.
	Local bool
	// Parallel is how many types run at once on AWS when every quota allows.
	Parallel int
	// Image and RoleARN are what the measurement endpoints run on AWS; ModelDir holds the model's weights.
	Image, RoleARN, ModelDir string
	// Artifacts is the directory of the type artifact sets and the report; JournalDir the freeze journals'.
	Artifacts, JournalDir string
	Stderr                io.Writer
	// QMax measures Q_max on m's endpoint (tts-bench qmax's code), writing its artifact to output and printing
	// on w; TTotal measures T_total from that artifact, writing to output.
	QMax   func(ctx context.Context, m models.Model, output string, w io.Writer) error
	TTotal func(ctx context.Context, m models.Model, qmaxPath, output string, w io.Writer) error

	// destroyFailed counts the measurement endpoints that could not be destroyed.
	destroyFailed atomic.Int32
}

// TypeDir is the artifact set of one type: capacity.TypeArtifactDir (artifacts/<model>/<type>/), or <type>/
// inside Artifacts.
func (o *Compare) TypeDir(it string) string {
	if o.Artifacts == capacity.ArtifactDir(o.Model.ID) {
		return capacity.TypeArtifactDir(o.Model.ID, it)
	}
	return filepath.Join(o.Artifacts, it)
}

// Run measures, plans and simulates every type (one at a time on the emulator, Parallel at a time on AWS when
// every quota allows), names the winner and writes the report and its chart into Artifacts. It returns the
// report and where it wrote it. Interrupted (ctx done), it writes no report and returns an error that says
// what was left where.
func (o *Compare) Run(ctx context.Context, cfg aws.Config) (*capacity.TypeComparison, string, error) {
	rep := &capacity.TypeComparison{SchemaVersion: capacity.SchemaVersion, Model: o.Model.ID, Trace: o.Trace.Name,
		PeakRPS: o.PeakRPS, TroughRPS: o.TroughRPS, Local: o.Local, Rows: make([]capacity.TypeRow, len(o.Types))}
	parallel := o.Parallel
	if o.Local {
		if parallel > 1 {
			fmt.Fprintf(o.Stderr, "compare %s: --parallel %d ignored on --local: the emulated instances share this host's cores, so the types run one at a time\n", o.Model.ID, parallel)
		}
		parallel = 1
	} else if parallel > 1 {
		parallel = o.quotaParallel(ctx, cfg, parallel)
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, it := range o.Types {
		if ctx.Err() != nil {
			rep.Rows[i] = capacity.TypeRow{InstanceType: it, ArtifactDir: o.TypeDir(it), Error: "not measured: the comparison was interrupted"}
			continue
		}
		sem <- struct{}{}
		if ctx.Err() != nil { // interrupted while the previous type ran: deploy nothing more
			<-sem
			rep.Rows[i] = capacity.TypeRow{InstanceType: it, ArtifactDir: o.TypeDir(it), Error: "not measured: the comparison was interrupted"}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rep.Rows[i] = o.runType(ctx, cfg, it)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		left := "every measurement endpoint was destroyed"
		if n := o.destroyFailed.Load(); n > 0 {
			left = fmt.Sprintf("%d measurement endpoint(s) could NOT be destroyed (see DESTROY FAILED above): delete them by hand", n)
		}
		return nil, "", fmt.Errorf("compare %s: interrupted (%v): %s; the finished types' artifacts stay in %s; no report written", o.Model.ID, cause, left, o.Artifacts)
	}
	decide(rep)
	out := filepath.Join(o.Artifacts, capacity.CompareFile)
	if err := capacity.WriteTypeComparison(out, rep); err != nil {
		return nil, "", fmt.Errorf("compare %s: write the report: %w", o.Model.ID, err)
	}
	fmt.Fprintf(o.Stderr, "compare %s: wrote the report to %s\n", o.Model.ID, out)
	chart := filepath.Join(o.Artifacts, CompareChartFile)
	if png, err := RenderCompareChart(rep); err != nil {
		fmt.Fprintf(o.Stderr, "compare %s: no chart: %v\n", o.Model.ID, err)
	} else if err := capacity.WriteFileAtomic(chart, png); err != nil {
		return nil, "", fmt.Errorf("compare %s: write the chart: %w", o.Model.ID, err)
	} else {
		fmt.Fprintf(o.Stderr, "compare %s: wrote the chart to %s\n", o.Model.ID, chart)
	}
	return rep, out, nil
}

// quotaParallel checks each type's quota (two instances: ttotal adds one) and returns how many types may run
// at once: want when every quota allows, else 1.
func (o *Compare) quotaParallel(ctx context.Context, cfg aws.Config, want int) int {
	quotas, usage := cloud.NewQuotaClients(cfg)
	for _, it := range o.Types {
		c := cloud.CheckQuota(ctx, quotas, usage, it, CompareEndpoint(o.Model.ID, it), 2, cloud.DefaultCheckTimeout)
		if c.Status != cloud.PreflightOK {
			fmt.Fprintf(o.Stderr, "compare %s: quota of %s: %s %s: the types run one at a time\n", o.Model.ID, it, c.Status, c.Detail)
			return 1
		}
	}
	return want
}

// decide names the winner, the cheapest per day among the types that hold, and adds the comparison's notes.
func decide(rep *capacity.TypeComparison) {
	for _, r := range rep.Rows {
		if r.Holds && (rep.Winner == "" || r.CostPerDayUSD < rep.Row(rep.Winner).CostPerDayUSD) {
			rep.Winner = r.InstanceType
		}
	}
	if rep.Local {
		rep.Notes = append(rep.Notes, "measured on the local emulator: the types differ only by the emulator's instance-type profiles (start-up phases, the twin's service time), not by real hardware")
	}
	cpu := false
	for _, r := range rep.Rows {
		cpu = cpu || r.CPUPercent != nil || r.MemoryMB != nil
	}
	if !cpu {
		rep.Notes = append(rep.Notes, "no CPU or memory figure: the container's EMF lines carry only its queue metrics (QueueDepth, QueueDepthPeak, QueueRejections), and no CPUUtilization datapoint of /aws/sagemaker/Endpoints was found for the qmax run (the emulator publishes none); SageMaker's MemoryUtilization is a percentage of the instance's memory and is not read as megabytes")
	}
}

// phase prints one progress line of a type on stderr.
func (o *Compare) phase(it, format string, args ...any) {
	fmt.Fprintf(o.Stderr, "compare %s %s: %s\n", o.Model.ID, it, fmt.Sprintf(format, args...))
}

// runType measures, plans and simulates one type and always destroys its endpoint. Its errors go into the row.
func (o *Compare) runType(ctx context.Context, cfg aws.Config, it string) (row capacity.TypeRow) {
	dir := o.TypeDir(it)
	row = capacity.TypeRow{InstanceType: it, ArtifactDir: dir, PricePerHourUSD: o.Price[it].USD, PriceSource: o.Price[it].Source}
	ep := CompareEndpoint(o.Model.ID, it)
	m := o.Model.WithEndpoint(ep)
	dcl := cloud.NewDeployClients(cfg)
	sm := dcl.SageMaker
	deployed := false
	defer func() {
		if !deployed {
			return
		}
		// A fresh context: the run's may be canceled (SIGINT), and the endpoint must go all the same.
		dctx, cancel := context.WithTimeout(context.Background(), compareDestroyTimeout)
		defer cancel()
		o.phase(it, "destroy the endpoint %s (its endpoint config and model too)", ep)
		if _, err := cloud.DestroyEndpoint(dctx, sm, ep); err != nil {
			err = cloud.Diagnose(err)
			o.phase(it, "DESTROY FAILED: %v: the endpoint %s may still exist (and cost money while it runs): check it (aws sagemaker describe-endpoint --endpoint-name %s) and delete it, its endpoint config and its model by hand", err, ep, ep)
			o.destroyFailed.Add(1)
			row.Error = strings.TrimPrefix(row.Error+"; destroy: "+err.Error(), "; ")
			row.Holds = false
		}
	}()
	fail := func(phase string, err error) capacity.TypeRow {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted (%w)", context.Cause(ctx))
		}
		err = cloud.Diagnose(err) // an AWS error as the preflight's one line with the fix
		o.phase(it, "%s failed: %v", phase, err)
		row.Error = phase + ": " + err.Error()
		return row
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("artifacts", err)
	}

	o.phase(it, "deploy the measurement endpoint %s (no autoscaling, unbounded queue)", ep)
	deployed = true
	off := false
	image, role := o.Image, o.RoleARN
	if o.Local {
		image, role = cloud.LocalImage, cloud.LocalRole
	}
	if _, err := cloud.DeployModel(ctx, dcl,
		cloud.DeployOptions{Model: m, InstanceType: it, Image: image, RoleARN: role, PlanPath: filepath.Join(dir, capacity.PlanFile),
			ModelDir: o.ModelDir, AutoscalingOverride: &off}); err != nil {
		return fail("deploy", err)
	}

	o.phase(it, "drift: nothing may disturb the measurement")
	cl := cloud.NewClients(cfg)
	drift, err := cloud.Drift(ctx, cl.Drift(), cloud.DriftOptions{Model: m.ID, Endpoint: ep, Variant: models.VariantName, JournalDir: o.JournalDir,
		CatalogInstances: int32(m.InitialInstanceCount), NoPlanReasons: []string{"compare measures in the measurement configuration (no scaling)"}})
	if err != nil {
		return fail("drift", err)
	}
	if !drift.Clean() {
		var lines []string
		for _, f := range drift.Findings {
			if f.Severity == cloud.SeverityError {
				lines = append(lines, f.Code+" "+f.Subject+": "+f.Detail)
			}
		}
		return fail("drift", fmt.Errorf("%d error(s): %s", drift.Errors(), strings.Join(lines, "; ")))
	}

	qmaxPath, ttotalPath := filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile)
	sub := &prefixWriter{w: o.Stderr, prefix: "  [" + it + "] "}
	o.phase(it, "qmax: the highest concurrency per instance within the SLO, then the rate staircase")
	if err := o.QMax(ctx, m, qmaxPath, sub); err != nil {
		return fail("qmax", err)
	}
	o.phase(it, "ttotal: how long one more instance takes to serve")
	if err := o.TTotal(ctx, m, qmaxPath, ttotalPath, sub); err != nil {
		return fail("ttotal", err)
	}
	fillMeasured(ctx, cl.CloudWatch, &row, qmaxPath, ttotalPath)

	o.phase(it, "plan for peak %s rps, trough %s rps; simulate it on the trace %s", FormatFloat(o.PeakRPS), capacity.FormatNumber(o.TroughRPS), o.Trace.Name)
	if err := o.planAndSimulate(ctx, m, &row, qmaxPath, ttotalPath); err != nil {
		return fail("plan", err)
	}
	verdict := "holds"
	if !row.Holds {
		verdict = "does not hold: " + row.Finding
	}
	o.phase(it, "%s; %s USD a day", verdict, capacity.FormatNumber(row.CostPerDayUSD))
	return row
}

// fillMeasured copies the measurements into the row, and the container's CPU and memory during qmax where
// CloudWatch has them.
func fillMeasured(ctx context.Context, cw cloud.MetricReadAPI, row *capacity.TypeRow, qmaxPath, ttotalPath string) {
	q, err := capacity.LoadQMax(qmaxPath)
	if err != nil {
		return
	}
	row.QMaxStall = q.QMax
	row.QMaxTTFAB = q.QMax
	if q.QMaxTTFABOnly != nil {
		row.QMaxTTFAB = *q.QMaxTTFABOnly
	}
	if t, err := capacity.LoadTTotal(ttotalPath); err == nil {
		row.TTotalS = t.TTotalS
	}
	// SageMaker's MemoryUtilization is a percentage of the instance's memory, not megabytes: MemoryMB stays nil
	// rather than a figure converted with a memory size this code does not know.
	row.CPUPercent = cloud.InstanceMetricMax(ctx, cw, q.Endpoint, models.VariantName, "CPUUtilization", q.StartedAt, q.EndedAt)
}

// planAndSimulate plans for the trace's peak and trough from the type's artifacts (tts-bench plan's code),
// writes the plan beside them, and simulates it on the trace (tts-bench simulate's code). It stops, writing no
// plan, when ctx is done.
func (o *Compare) planAndSimulate(ctx context.Context, m models.Model, row *capacity.TypeRow, qmaxPath, ttotalPath string) error {
	_, build, err := capacity.MeasuredBuilder(m, qmaxPath, ttotalPath)
	if err != nil {
		return err
	}
	opts := capacity.DefaultOptions(m)
	opts.PeakRPS, opts.TroughRPS = o.PeakRPS, o.TroughRPS
	p, err := build(ctx, opts)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := capacity.WriteJSON(filepath.Join(row.ArtifactDir, capacity.PlanFile), p); err != nil {
		return err
	}
	row.SafeRPS = p.Derived.SafeRPS
	row.MinInstances, row.MaxInstances = p.Derived.MinInstances, p.Derived.MaxInstances
	row.Feasible = p.Feasible()
	sim, err := capacity.CompareContext(ctx, o.Trace, capacity.Setup{Plan: p, PricePerHour: row.PricePerHourUSD, AllowedMaxInstances: m.Scaling.MaxInstances})
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	r := sim.Plan
	row.ViolationMinutes, row.InstanceHours, row.Requests = r.ViolationMinutes, r.InstanceHours, r.Offered
	if d := o.Trace.Duration.Hours(); d > 0 {
		row.CostPerDayUSD = r.InstanceHours * row.PricePerHourUSD * 24 / d
	}
	if r.Offered > 0 {
		row.CostPer1000USD = r.InstanceHours * row.PricePerHourUSD / r.Offered * 1000
	}
	row.Holds = row.Feasible && r.Holds()
	switch {
	case !row.Feasible:
		var failed []string
		for _, f := range p.Failed() {
			failed = append(failed, f.Name+": "+f.Detail)
		}
		row.Finding = "the plan is infeasible: " + strings.Join(failed, "; ")
	case !r.Holds():
		row.Finding = fmt.Sprintf("%d violation minute(s) and %d flap(s) on %s", r.ViolationMinutes, len(r.Flaps), o.Trace.Name)
		if r.Worst != nil {
			row.Finding += fmt.Sprintf("; worst minute %d: %s", r.Worst.Minute, r.Worst.Why)
		}
	}
	return nil
}

// prefixWriter writes every line with a prefix, so that a sub-command's output reads as the type's.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if !p.mid {
			out = append(out, p.prefix...)
			p.mid = true
		}
		out = append(out, c)
		if c == '\n' {
			p.mid = false
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}

// DryRun prints what Run would do and changes nothing: the endpoints, the quota check of each type (read-only
// calls on AWS), the estimated duration and the estimated measurement cost. qmaxD, ttotalD and deployD bound
// one type's qmax, ttotal and deploy.
func (o *Compare) DryRun(ctx context.Context, cfg aws.Config, w io.Writer, qmaxD, ttotalD, deployD time.Duration) error {
	per := deployD + qmaxD + ttotalD
	usd := capacity.FormatUSD
	var b strings.Builder
	fmt.Fprintf(&b, "compare %s, DRY RUN: nothing is created, changed or deleted.\n\n", o.Model.ID)
	fmt.Fprintf(&b, "trace %s: every type planned for peak %s rps, trough %s rps\n", o.Trace.Name, capacity.FormatNumber(o.PeakRPS), capacity.FormatNumber(o.TroughRPS))
	fmt.Fprintf(&b, "per type at most %s: deploy %s (start-up bound), qmax %s (its own bound), ttotal %s (warm-up + max wait)\n\n",
		per.Round(time.Second), deployD.Round(time.Second), qmaxD.Round(time.Second), ttotalD.Round(time.Second))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tENDPOINT (would be created, then destroyed)\tUSD/H\tMEASUREMENT COST AT MOST\tQUOTA (two instances: ttotal adds one)\t")
	allOK := true
	total := 0.0
	quotas, usage := cloud.NewQuotaClients(cfg)
	for _, it := range o.Types {
		ep := CompareEndpoint(o.Model.ID, it)
		quota := "none on the emulator"
		if !o.Local {
			c := cloud.CheckQuota(ctx, quotas, usage, it, ep, 2, cloud.DefaultCheckTimeout)
			quota = string(c.Status) + ": " + c.Detail
			if c.Fix != "" {
				quota += " → " + c.Fix
			}
			allOK = allOK && c.Status == cloud.PreflightOK
		}
		// One instance for the whole run, a second during ttotal: the bound charges both for all of it.
		cost := 2 * per.Hours() * o.Price[it].USD
		total += cost
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s USD\t%s\t\n", it, ep, usd(o.Price[it].USD), usd(cost), quota)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nPRICES\n")
	for _, it := range o.Types {
		fmt.Fprintf(&b, "  %s  %s USD an instance-hour (%s)\n", it, usd(o.Price[it].USD), o.Price[it].Source)
	}
	n := len(o.Types)
	wall := time.Duration(n) * per
	switch {
	case o.Local:
		fmt.Fprintf(&b, "\none type at a time on the emulator: at most %s in all; the emulator bills nothing (on AWS the measurements would cost at most %s USD)\n", wall.Round(time.Second), usd(total))
	default:
		par := min(o.Parallel, n)
		if !allOK {
			par = 1
		}
		waves := (n + par - 1) / par
		fmt.Fprintf(&b, "\n%d type(s) at a time (--parallel %d; one at a time when a quota is short): at most %s in all, at most %s USD of measurement\n",
			par, o.Parallel, (time.Duration(waves) * per).Round(time.Second), usd(total))
	}
	fmt.Fprintf(&b, "then the report %s and the chart %s\n", filepath.Join(o.Artifacts, capacity.CompareFile), filepath.Join(o.Artifacts, CompareChartFile))
	_, err := io.WriteString(w, b.String())
	return err
}
