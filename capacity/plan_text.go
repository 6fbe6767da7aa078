package capacity

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// RenderPlan prints p in format: the artifact's JSON ("json"), or the table for humans (docs/design.md,
// "Plan"): inputs, derived values with their reasoning, the envelope, the findings and the verdict.
func RenderPlan(w io.Writer, format string, p *Plan) error {
	if format == "json" {
		data, err := MarshalArtifact(p)
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}
	return writePlanTable(w, p)
}

// writePlanTable prints the plan for humans: inputs, derived values, findings and the verdict.
func writePlanTable(w io.Writer, p *Plan) error {
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
	row("Q_max", strconv.Itoa(in.QMax), "concurrent requests per instance within the SLO, by TTFAB and stall: planned with")
	if p.Measured {
		v, note := "not recorded", "by TTFAB alone, the original's definition: the qmax artifact predates it"
		if in.QMaxTTFABOnly != nil {
			v, note = strconv.Itoa(*in.QMaxTTFABOnly), "by TTFAB alone, the original's definition (stall not judged): for comparison only, not planned with"
			if in.QMaxTTFABOnlyLowerBound {
				v = "≥ " + v
			}
		}
		row("Q_max TTFAB only", v, note)
	}
	row("T_total", FormatNumber(in.TTotalS)+" s", "one more instance, asked for until serving")
	row("surge ratio s", exact(in.SurgeRatio), "load may grow ×s within one T_plan")
	row("detection buffer", FormatNumber(in.DetectionBufferS)+" s", fmt.Sprintf("metric %d × %d s datapoints + cooldown", in.EvaluationPeriods, in.MetricPeriodS))
	row("load", fmt.Sprintf("peak %s rps", exact(in.PeakRPS)), fmt.Sprintf("trough %s rps", FormatNumber(in.TroughRPS)))
	row("fleet bounds", fmt.Sprintf("%d to %d", in.MinInstances, in.MaxInstances), "instances allowed")
	row("queue_max_depth", strconv.Itoa(in.QueueMaxDepth), "catalog shield depth per instance")
	row("cloudwatch ratio", FormatNumber(in.CloudWatchRatio), "CloudWatch ÷ client concurrency")
	if err := tw.Flush(); err != nil {
		return err
	}
	var curve []string
	for _, pt := range in.Throughput {
		curve = append(curve, fmt.Sprintf("%s@%s", FormatNumber(pt.RPS), FormatNumber(pt.Concurrency)))
	}
	fmt.Fprintf(b, "  throughput curve (rps@concurrency, closed loop, per instance): %s\n", strings.Join(curve, " "))
	fmt.Fprintf(b, "  instance model: %s\n", in.Instance.Basis)
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nDERIVED (each value and the reasoning behind it)\t\t")
	for _, r := range d.Reasoning {
		row(r.Field, r.Value+unitOf(r.Field), r.Why)
	}
	row("fleet", fmt.Sprintf("%d to %d instances", d.MinInstances, d.MaxInstances), "the scalable target's bounds")
	row("original thresholds", fmt.Sprintf("%s / %s", FormatNumber(d.CScaleMax), FormatNumber(d.CScaleMin)),
		"(1 − h)·Q_max / (1 − 2h)·Q_max concurrency, for comparison only: not deployed (see the README on why they flap)")
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(b, "\nENVELOPE (%s)\n", p.Envelope.SimulatorVersion)
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  trace\tviolation min\tflaps\tscale-outs\tscale-ins\tpeak instances\tinstance-hours\tholds\t")
	for _, t := range p.Envelope.Traces {
		holds := "yes"
		if !t.Holds {
			holds = "NO: " + t.Worst
		}
		fmt.Fprintf(tw, "  %s: %s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t\n", t.Kind, t.Name, t.ViolationMinutes, t.Flaps, t.ScaleOuts, t.ScaleIns, t.PeakInstances, FormatNumber(t.InstanceHours), holds)
	}
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

// unitOf is the unit a derived field prints with.
func unitOf(field string) string {
	switch {
	case strings.HasSuffix(field, "_rps"):
		return " rps"
	case strings.HasSuffix(field, "_s"):
		return " s"
	case field == "target_value" || field == "scale_in_threshold":
		return " (metric: requests in flight, 10-s Maximum)"
	}
	return ""
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
