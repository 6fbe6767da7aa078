package capacity

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/speech-infra/speech-infra/internal/textwidth"
	"github.com/speech-infra/speech-infra/simulate"
)

// simClock formats seconds since the start of the trace as [d+]hh:mm.
func simClock(s float64) string {
	d := time.Duration(s) * time.Second
	days, h, m := int(d/(24*time.Hour)), int(d/time.Hour)%24, int(d/time.Minute)%60
	if days > 0 {
		return fmt.Sprintf("%d+%02d:%02d", days, h, m)
	}
	return fmt.Sprintf("%02d:%02d", h, m)
}

func simUSD(v float64) string { return fmt.Sprintf("$%.2f", v) }

// RenderReport prints a simulation's report in format: its JSON ("json"), or the text for humans, every line
// within textwidth.Width(w): the minutes that violated (every minute when minutes is true), the scaling
// events, the totals and the comparison with the other configurations.
func RenderReport(w io.Writer, format string, rep Report, minutes bool) error {
	if format == "json" {
		return writeIndentedJSON(w, rep)
	}
	width := textwidth.Width(w)
	wrap := func(s string) string { return textwidth.Wrap(s, width, "", "  ") }
	b := &strings.Builder{}
	r := rep.Plan
	kind := "measured"
	if !rep.Measured {
		kind = "NOT MEASURED (what-if assumptions)"
	}
	b.WriteString(wrap(fmt.Sprintf("Simulation of %s on %s (%s), SLO p%d TTFAB ≤ %d ms, %s per instance-hour", rep.Model, rep.InstanceType, kind, rep.SLOPercentile, rep.SLOMs, simUSD(rep.PricePerHour))))
	b.WriteString(wrap(fmt.Sprintf("trace: %s (peak %s rps)", rep.Trace, FormatNumber(rep.PeakRPS))))
	if rep.PriceSource != "" {
		// The source's provenance (where the catalog's price came from) is in the JSON; its first clause names it.
		// The catalog's provenance of the price (where it was entered from) is in the JSON; the text names the
		// source and keeps a closing parenthesis (how a local run was priced).
		src, rest, more := strings.Cut(rep.PriceSource, ", ")
		if more {
			src += " (its provenance: --format json)"
			if i := strings.LastIndex(rest, " ("); i >= 0 && strings.HasSuffix(rest, ")") {
				src += rest[i:]
			}
		}
		b.WriteString(wrap(fmt.Sprintf("price: %s per instance-hour from %s", simUSD(rep.PricePerHour), src)))
	}
	b.WriteString(wrap(fmt.Sprintf("fleet: %s, %d to %d instances", r.Name, r.MinInstances, r.MaxInstances)))
	for _, n := range rep.Notes {
		b.WriteString(wrap("note: " + n))
	}
	b.WriteString(wrap("instance: " + rep.Instance))
	shown, violated := r.Minutes, 0
	if !minutes {
		shown = nil
		for _, m := range r.Minutes {
			if m.Violates {
				violated++
				if len(shown) < maxViolatedRows {
					shown = append(shown, m)
				}
			}
		}
	}
	if len(shown) > 0 {
		b.WriteByte('\n')
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "time\tserving\tstarting\trps\trps/inst\tmetric\tin flight\tp%d TTFAB ms\tshed/s\tSLO\t\n", rep.SLOPercentile)
		for _, m := range shown {
			mark := "ok"
			if m.Violates {
				mark = "VIOLATED"
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", simClock(float64(m.Minute*60)), m.Serving, m.Starting,
				simRound(m.OfferedRPS), simRound(m.LoadPerInstanceRPS), simRound(m.Metric), simRound(m.Concurrency), fmt.Sprintf("%.0f", m.TTFABMs), simRound(m.ShedRPS), mark)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if !minutes {
		note := fmt.Sprintf("%d of %d minutes violated", violated, len(r.Minutes))
		if violated > len(shown) {
			note += fmt.Sprintf(" (the first %d shown)", len(shown))
		}
		b.WriteString("\n" + wrap(note+"; --minutes prints every minute"))
	}
	fmt.Fprintln(b, "\nSCALING")
	if len(r.Events) == 0 {
		fmt.Fprintln(b, "  none")
	}
	for i, e := range r.Events {
		if !minutes && i == maxEventRows {
			b.WriteString(wrap(fmt.Sprintf("  and %d more: --minutes prints them all", len(r.Events)-i)))
			break
		}
		// The reason's first clause (what the alarm saw); the arithmetic after it is in --minutes and the JSON.
		reason := e.Reason
		if short, _, cut := strings.Cut(reason, ": "); cut && !minutes {
			reason = short
		}
		line := fmt.Sprintf("%s  %d → %d  %s", simClock(e.AtS), e.From, e.To, reason)
		if e.ServingAtS > 0 {
			line += fmt.Sprintf("; serving at %s", simClock(e.ServingAtS))
		}
		b.WriteString(textwidth.Wrap(line, width, "  ", "      "))
	}
	if sp := rep.Spread; sp != nil {
		b.WriteString("\n" + wrap(fmt.Sprintf("SCATTERED (%d runs with the alarm's 10-s datapoints drawn as qmax measured them; the plan holds when the run above and at least %s%% of these hold)", sp.Runs, FormatNumber(100*ScatterHoldShare))))
		first := "no run scaled out"
		if q := sp.FirstScaleOutS; q != nil {
			first = fmt.Sprintf("%.0f / %.0f / %.0f s after the start (p2.5 / median / p97.5)", q[0], q[1], q[2])
			if at := simulate.FirstScaleOut(r); at >= 0 {
				first += fmt.Sprintf("; the run above at %.0f s", at)
			}
			if sp.WithoutScaleOut > 0 {
				first += fmt.Sprintf("; %d run(s) never scaled out", sp.WithoutScaleOut)
			}
		}
		if err := textwidth.Table(b, width, "  ", [][]string{
			{"first scale-out", first},
			{"peak instances", fmt.Sprintf("%d to %d", sp.PeakInstancesMin, sp.PeakInstancesMax)},
			{"runs with a violation", fmt.Sprintf("%d of %d", sp.ViolationRuns, sp.Runs)},
			{"runs that held", fmt.Sprintf("%d of %d (at least %s%% must: %s)", sp.HeldRuns, sp.Runs, FormatNumber(100*ScatterHoldShare), map[bool]string{true: "met", false: "NOT MET"}[sp.Holds()])},
			{"instance-hours", fmt.Sprintf("mean %s, cost %s (the run above: %s)", simRound(sp.MeanInstanceHours), simUSD(sp.MeanCost), simRound(r.InstanceHours))},
		}); err != nil {
			return err
		}
	}
	fmt.Fprintln(b, "\nTOTALS")
	totals := [][]string{
		{"SLO-violation minutes", fmt.Sprintf("%d of %d", r.ViolationMinutes, len(r.Minutes))},
		{"flaps", fmt.Sprintf("%d (a scale-in followed by a scale-out within T_plan)", len(r.Flaps))},
		{"requests shed (503)", fmt.Sprintf("%.0f of %.0f (%s%%)", r.Shed, r.Offered, simRound(100*r.Shed/math.Max(r.Offered, 1)))},
		{"instance-hours", fmt.Sprintf("%s (peak %d instances)", simRound(r.InstanceHours), r.PeakInstances)},
		{"cost", simUSD(r.Cost)},
	}
	if r.Worst != nil {
		totals = append(totals, []string{"worst minute", fmt.Sprintf("%s: %s", simClock(float64(r.Worst.Minute*60)), r.Worst.Why)})
	}
	if err := textwidth.Table(b, width, "  ", totals); err != nil {
		return err
	}
	fmt.Fprintln(b, "\nCOMPARISON (same trace; each configuration and how it is sized below)")
	rows := [][]string{{"#", "fleet", "violation min", "flaps", "shed", "instance-hours", "cost", "holds"}}
	for i, c := range rep.Comparison {
		meets := "no"
		if c.MeetsSLO {
			meets = "yes"
		}
		if i == rep.Cheapest {
			meets += " (cheapest)"
		}
		rows = append(rows, []string{strconv.Itoa(i + 1), fmt.Sprintf("%d-%d", c.MinInstances, c.MaxInstances), strconv.Itoa(c.ViolationMinutes), strconv.Itoa(c.Flaps),
			fmt.Sprintf("%.0f", c.Shed), simRound(c.InstanceHours), simUSD(c.Cost), meets})
	}
	if err := textwidth.Table(b, width, "  ", rows); err != nil {
		return err
	}
	for i, c := range rep.Comparison {
		num := fmt.Sprintf("  %-3d ", i+1)
		b.WriteString(textwidth.Wrap(c.Name+": "+c.Note, width, num, strings.Repeat(" ", len(num))))
	}
	if rep.OracleRatio > 0 && rep.PlanHolds() {
		b.WriteString("\n" + wrap(fmt.Sprintf("oracle instance-hours ÷ plan instance-hours: %s (1 is the limit of any reactive fleet)", simRound(rep.OracleRatio))))
	}
	if rep.Cheapest >= 0 {
		c := rep.Comparison[rep.Cheapest]
		b.WriteString("\n" + wrap(fmt.Sprintf("RESULT  the cheapest configuration that meets the SLO on this trace: %s, %s", c.Name, simUSD(c.Cost))))
	} else {
		b.WriteString("\n" + wrap("RESULT  no configuration compared meets the SLO on this trace: raise the fleet maximum, measure a faster instance, or lower the load"))
	}
	if !rep.Measured {
		fmt.Fprintln(b, "These numbers are NOT MEASURED: they come from --what-if assumptions.")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// maxViolatedRows and maxEventRows bound the violating minutes and the scaling decisions simulate prints
// without --minutes.
const (
	maxViolatedRows = 10
	maxEventRows    = 16
)

func simRound(v float64) string { return FormatNumber(math.Round(v*100) / 100) }
