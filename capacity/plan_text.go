package capacity

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/speech-infra/speech-infra/internal/textwidth"
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

// writePlanTable prints the plan for humans: inputs, derived values, findings and the verdict, every line
// within textwidth.Width(w) (free text wraps under its column).
func writePlanTable(w io.Writer, p *Plan) error {
	width := textwidth.Width(w)
	in, d, fp := p.Inputs, p.Derived, p.Fingerprint
	kind := "measured"
	if !p.Measured {
		kind = "WHAT-IF (assumed numbers, measured: false)"
	}
	b := &strings.Builder{}
	b.WriteString(textwidth.Wrap(fmt.Sprintf("Plan for %s on %s: %s, transport %s, SLO p%d TTFAB ≤ %d ms", fp.Model, fp.InstanceType, kind, fp.Transport, fp.SLOPercentile, fp.SLOTTFABMs), width, "", "  "))
	var rows [][]string
	row := func(name, value, note string) { rows = append(rows, []string{name, value, note}) }
	table := func(title string) error {
		fmt.Fprintf(b, "\n%s\n", title)
		err := textwidth.Table(b, width, "  ", rows)
		rows = nil
		return err
	}
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
	buffer := fmt.Sprintf("metric %d × %d s datapoints + cooldown", in.EvaluationPeriods, in.MetricPeriodS)
	if f := in.Compression(); f > 1 {
		buffer = fmt.Sprintf("AWS's seconds, ÷ CloudWatch compression %d in T_plan (the emulator measured)", f)
	}
	row("detection buffer", FormatNumber(in.DetectionBufferS)+" s", buffer)
	row("load", fmt.Sprintf("peak %s rps", exact(in.PeakRPS)), fmt.Sprintf("trough %s rps", FormatNumber(in.TroughRPS)))
	row("fleet bounds", fmt.Sprintf("%d to %d", in.MinInstances, in.MaxInstances), "instances allowed")
	row("queue_max_depth", strconv.Itoa(in.QueueMaxDepth), "catalog shield depth per instance")
	row("cloudwatch ratio", FormatNumber(in.CloudWatchRatio), "CloudWatch ÷ client concurrency")
	if err := table("INPUTS"); err != nil {
		return err
	}
	var curve []string
	for _, pt := range in.Throughput {
		curve = append(curve, fmt.Sprintf("%s@%s", FormatNumber(pt.RPS), FormatNumber(pt.Concurrency)))
	}
	b.WriteString(textwidth.Wrap("throughput curve (rps@concurrency, closed loop, per instance): "+strings.Join(curve, " "), width, "  ", "    "))
	b.WriteString(textwidth.Wrap("instance model: "+in.Instance.Basis, width, "  ", "    "))
	for _, r := range d.Reasoning {
		row(r.Field, r.Value+unitOf(r.Field), r.Why)
	}
	row("fleet", fmt.Sprintf("%d to %d instances", d.MinInstances, d.MaxInstances), "the scalable target's bounds")
	row("original thresholds", fmt.Sprintf("%s / %s", FormatNumber(d.CScaleMax), FormatNumber(d.CScaleMin)),
		"(1 − h)·Q_max / (1 − 2h)·Q_max concurrency, for comparison only: not deployed (see the README on why they flap)")
	if err := table("DERIVED (each value and the reasoning behind it)"); err != nil {
		return err
	}
	// The traces' names and failures are prose: the table holds the numbers, each trace's number leads its
	// description below it.
	rows = append(rows, []string{"#", "trace", "violation min", "flaps", "scale-outs", "scale-ins", "peak instances", "instance-hours", "holds"})
	for i, t := range p.Envelope.Traces {
		holds := "yes"
		if !t.Holds {
			holds = "NO"
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), t.Kind, strconv.Itoa(t.ViolationMinutes), strconv.Itoa(t.Flaps), strconv.Itoa(t.ScaleOuts), strconv.Itoa(t.ScaleIns),
			strconv.Itoa(t.PeakInstances), FormatNumber(t.InstanceHours), holds})
	}
	if err := table("ENVELOPE"); err != nil {
		return err
	}
	b.WriteString(textwidth.Wrap("simulator "+p.Envelope.SimulatorVersion, width, "  ", "    "))
	for i, t := range p.Envelope.Traces {
		text := t.Name
		if !t.Holds {
			text += ". NO: " + t.Worst
		}
		num := fmt.Sprintf("  %-3d ", i+1)
		b.WriteString(textwidth.Wrap(text, width, num, strings.Repeat(" ", len(num))))
	}
	for _, f := range p.Findings {
		row(string(f.Status), f.Name, f.Detail)
		if f.Recommendation != "" {
			row("", "", "→ "+f.Recommendation)
		}
	}
	if err := table("FINDINGS"); err != nil {
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
