package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
)

// renderCompare prints the report (written at path): its JSON, or a table for humans that names the winner or, when no type
// holds, each type's finding.
func renderCompare(w io.Writer, format string, rep *capacity.TypeComparison, path string) error {
	if format == "json" {
		data, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(data, '\n'))
		return err
	}
	var b strings.Builder
	where := "AWS"
	if rep.Local {
		where = "the local emulator"
	}
	fmt.Fprintf(&b, "Instance types for %s on %s, each planned for peak %s rps and trough %s rps and simulated on the trace %s\n\n",
		rep.Model, where, capacity.FormatNumber(rep.PeakRPS), capacity.FormatNumber(rep.TroughRPS), rep.Trace)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tQ_MAX TTFAB\tQ_MAX +STALL\tSAFE RPS\tT_TOTAL\tFLEET\tVIOLATION MIN\tINSTANCE-H\tUSD/H\tUSD/DAY\tUSD/1000 REQ\tCPU\tHOLDS\t")
	for _, r := range rep.Rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%s\t-\t-\t-\tERROR\t\n", r.InstanceType, usd(r.PricePerHourUSD))
			continue
		}
		cpu := "-"
		if r.CPUPercent != nil {
			cpu = capacity.FormatNumber(*r.CPUPercent) + "%"
		}
		holds := "yes"
		if !r.Holds {
			holds = "no"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s s\t%d-%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.InstanceType, r.QMaxTTFAB, r.QMaxStall, capacity.FormatNumber(r.SafeRPS),
			capacity.FormatNumber(r.TTotalS), r.MinInstances, r.MaxInstances, r.ViolationMinutes, capacity.FormatNumber(r.InstanceHours),
			usd(r.PricePerHourUSD), usd(r.CostPerDayUSD), usd4(r.CostPer1000USD), cpu, holds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nPRICES\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "  %s  %s USD an instance-hour (%s)\n", r.InstanceType, usd(r.PricePerHourUSD), r.PriceSource)
	}
	if rep.Winner != "" {
		win := rep.Row(rep.Winner)
		fmt.Fprintf(&b, "\nWINNER  %s: the cheapest type that holds the SLO on %s, %s USD a day (%s USD per 1,000 requests)\n",
			rep.Winner, rep.Trace, usd(win.CostPerDayUSD), usd4(win.CostPer1000USD))
		fmt.Fprintf(&b, "  plan it: tts-bench plan --from-compare %s\n", path)
	} else {
		fmt.Fprintf(&b, "\nNO TYPE HOLDS the SLO on %s:\n", rep.Trace)
	}
	for _, r := range rep.Rows {
		switch {
		case r.Error != "":
			fmt.Fprintf(&b, "  %s  not measured: %s\n", r.InstanceType, r.Error)
		case !r.Holds:
			fmt.Fprintf(&b, "  %s  does not hold: %s\n", r.InstanceType, r.Finding)
		}
	}
	for _, n := range rep.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func usd(v float64) string  { return strconv.FormatFloat(v, 'f', 2, 64) }
func usd4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// measurementBound is the longest one type's measurement takes by the settings: qmax's bound (its own
// dry-run estimate), ttotal's warm-up and wait, and the deploy's start-up bound.
func (o *compareOpts) measurementBound(ctx context.Context) (qmaxD, ttotalD, deployD time.Duration, err error) {
	cat := o.catalog.With(o.model.WithEndpoint(compareEndpoint(o.model.ID, o.types[0])))
	common := append([]string{"--model", o.model.ID, "--journal-dir", o.jdir}, o.awsArgs()...)
	if o.containerDir != "" {
		common = append(common, "--container-dir", o.containerDir)
	}
	var out bytes.Buffer
	if err := runSub(ctx, qmaxCommand(), append(common, strings.Fields(o.qmaxArgs)...), &out, func(c *cli.Context) error {
		q := newQMaxOpts(c, cat)
		q.Output = "" // the estimate writes nothing
		if err := q.Validate(); err != nil {
			return err
		}
		qmaxD = q.DurationBound()
		return nil
	}); err != nil {
		return 0, 0, 0, subArgsError("qmax", "--qmax-args", err)
	}
	if err := runSub(ctx, ttotalCommand(), append(common, strings.Fields(o.ttotalArgs)...), &out, func(c *cli.Context) error {
		ttotalD = c.Duration("warmup") + c.Duration("max-wait")
		return nil
	}); err != nil {
		return 0, 0, 0, subArgsError("ttotal", "--ttotal-args", err)
	}
	deployD = time.Duration(o.model.Container.StartupHealthCheckTimeoutS)*time.Second + cloud.DeployWaitSlack
	return qmaxD, ttotalD, deployD, nil
}

// subArgsError says which sub-command refused its settings: those of flag, or the flags compare passes on.
func subArgsError(command, flag string, err error) error {
	return fmt.Errorf("%s refuses its settings (%s, or --container-dir and --journal-dir, which compare passes on): %w", command, flag, err)
}

// printDryRun prints what a run would do and changes nothing: the endpoints, the quota check of each type
// (read-only calls on AWS), the estimated duration and the estimated measurement cost.
func (o *compareOpts) printDryRun(ctx context.Context, cfg aws.Config, qd, td, dd time.Duration) error {
	per := dd + qd + td
	var b strings.Builder
	fmt.Fprintf(&b, "compare %s, DRY RUN: nothing is created, changed or deleted.\n\n", o.model.ID)
	fmt.Fprintf(&b, "trace %s: every type planned for peak %s rps, trough %s rps\n", o.tr.Name, capacity.FormatNumber(o.peakRPS), capacity.FormatNumber(o.troughRPS))
	fmt.Fprintf(&b, "per type at most %s: deploy %s (start-up bound), qmax %s (its own bound), ttotal %s (warm-up + max wait)\n\n",
		per.Round(time.Second), dd.Round(time.Second), qd.Round(time.Second), td.Round(time.Second))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tENDPOINT (would be created, then destroyed)\tUSD/H\tMEASUREMENT COST AT MOST\tQUOTA (two instances: ttotal adds one)\t")
	allOK := true
	total := 0.0
	quotas, usage := cloud.NewQuotaClients(cfg)
	for _, it := range o.types {
		ep := compareEndpoint(o.model.ID, it)
		quota := "none on the emulator"
		if !o.aws.Local {
			c := cloud.CheckQuota(ctx, quotas, usage, it, ep, 2, cloud.DefaultCheckTimeout)
			quota = string(c.Status) + ": " + c.Detail
			if c.Fix != "" {
				quota += " → " + c.Fix
			}
			allOK = allOK && c.Status == cloud.PreflightOK
		}
		// One instance for the whole run, a second during ttotal: the bound charges both for all of it.
		cost := 2 * per.Hours() * o.price[it].usd
		total += cost
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s USD\t%s\t\n", it, ep, usd(o.price[it].usd), usd(cost), quota)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nPRICES\n")
	for _, it := range o.types {
		fmt.Fprintf(&b, "  %s  %s USD an instance-hour (%s)\n", it, usd(o.price[it].usd), o.price[it].source)
	}
	n := len(o.types)
	wall := time.Duration(n) * per
	switch {
	case o.aws.Local:
		fmt.Fprintf(&b, "\none type at a time on the emulator: at most %s in all; the emulator bills nothing (on AWS the measurements would cost at most %s USD)\n", wall.Round(time.Second), usd(total))
	default:
		par := min(o.parallel, n)
		if !allOK {
			par = 1
		}
		waves := (n + par - 1) / par
		fmt.Fprintf(&b, "\n%d type(s) at a time (--parallel %d; one at a time when a quota is short): at most %s in all, at most %s USD of measurement\n",
			par, o.parallel, (time.Duration(waves) * per).Round(time.Second), usd(total))
	}
	fmt.Fprintf(&b, "then the report %s and the chart %s\n", filepath.Join(o.artifacts, capacity.CompareFile), filepath.Join(o.artifacts, compareChartFile))
	_, err := io.WriteString(o.stdout, b.String())
	return err
}

// quotaParallel checks each type's quota (two instances: ttotal adds one) and returns how many types may run
// at once: want when every quota allows, else 1.
func (o *compareOpts) quotaParallel(ctx context.Context, cfg aws.Config, want int) int {
	quotas, usage := cloud.NewQuotaClients(cfg)
	for _, it := range o.types {
		c := cloud.CheckQuota(ctx, quotas, usage, it, compareEndpoint(o.model.ID, it), 2, cloud.DefaultCheckTimeout)
		if c.Status != cloud.PreflightOK {
			fmt.Fprintf(o.stderr, "compare %s: quota of %s: %s %s: the types run one at a time\n", o.model.ID, it, c.Status, c.Detail)
			return 1
		}
	}
	return want
}
