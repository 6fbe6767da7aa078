package capacity

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
)

// RenderTypeComparison prints a comparison of instance types (written at path): its JSON, or a table for
// humans that names the winner or, when no type holds, each type's finding (docs/design.md, "Instance types
// side by side").
func RenderTypeComparison(w io.Writer, format string, rep *TypeComparison, path string) error {
	if format == "json" {
		return writeIndentedJSON(w, rep)
	}
	var b strings.Builder
	where := "AWS"
	if rep.Local {
		where = "the local emulator"
	}
	fmt.Fprintf(&b, "Instance types for %s on %s, each planned for peak %s rps and trough %s rps and simulated on the trace %s\n\n",
		rep.Model, where, FormatNumber(rep.PeakRPS), FormatNumber(rep.TroughRPS), rep.Trace)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TYPE\tQ_MAX TTFAB\tQ_MAX +STALL\tSAFE RPS\tT_TOTAL\tFLEET\tVIOLATION MIN\tINSTANCE-H\tUSD/H\tUSD/DAY\tUSD/1000 REQ\tCPU\tHOLDS\t")
	for _, r := range rep.Rows {
		if r.Error != "" {
			fmt.Fprintf(tw, "%s\t-\t-\t-\t-\t-\t-\t-\t%s\t-\t-\t-\tERROR\t\n", r.InstanceType, FormatUSD(r.PricePerHourUSD))
			continue
		}
		cpu := "-"
		if r.CPUPercent != nil {
			cpu = FormatNumber(*r.CPUPercent) + "%"
		}
		holds := "yes"
		if !r.Holds {
			holds = "no"
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s s\t%d-%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.InstanceType, r.QMaxTTFAB, r.QMaxStall, FormatNumber(r.SafeRPS),
			FormatNumber(r.TTotalS), r.MinInstances, r.MaxInstances, r.ViolationMinutes, FormatNumber(r.InstanceHours),
			FormatUSD(r.PricePerHourUSD), FormatUSD(r.CostPerDayUSD), formatUSD4(r.CostPer1000USD), cpu, holds)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	b.WriteString("\nPRICES\n")
	for _, r := range rep.Rows {
		fmt.Fprintf(&b, "  %s  %s USD an instance-hour (%s)\n", r.InstanceType, FormatUSD(r.PricePerHourUSD), r.PriceSource)
	}
	if rep.Winner != "" {
		win := rep.Row(rep.Winner)
		fmt.Fprintf(&b, "\nWINNER  %s: the cheapest type that holds the SLO on %s, %s USD a day (%s USD per 1,000 requests)\n",
			rep.Winner, rep.Trace, FormatUSD(win.CostPerDayUSD), formatUSD4(win.CostPer1000USD))
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

// FormatUSD formats an amount of US dollars with two decimals, as the comparison prints prices and costs.
func FormatUSD(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }

// formatUSD4 formats a small amount of US dollars (a cost per 1,000 requests) with four decimals.
func formatUSD4(v float64) string { return strconv.FormatFloat(v, 'f', 4, 64) }

// writeIndentedJSON writes v as indented JSON and a newline: what --format json prints.
func writeIndentedJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}
