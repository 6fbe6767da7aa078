package capacity

import (
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

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

// RenderReport prints a simulation's report in format: its JSON ("json"), or the table for humans: the
// per-minute table, the totals, the scaling events and the comparison with the other configurations.
func RenderReport(w io.Writer, format string, rep Report) error {
	if format == "json" {
		return writeIndentedJSON(w, rep)
	}
	b := &strings.Builder{}
	r := rep.Plan
	kind := "measured"
	if !rep.Measured {
		kind = "NOT MEASURED (what-if assumptions)"
	}
	fmt.Fprintf(b, "Simulation of %s on %s (%s), SLO p%d TTFAB ≤ %d ms, %s per instance-hour\n", rep.Model, rep.InstanceType, kind, rep.SLOPercentile, rep.SLOMs, simUSD(rep.PricePerHour))
	fmt.Fprintf(b, "trace: %s (peak %s rps)\n", rep.Trace, FormatNumber(rep.PeakRPS))
	if rep.PriceSource != "" {
		fmt.Fprintf(b, "price: %s per instance-hour from %s\n", simUSD(rep.PricePerHour), rep.PriceSource)
	}
	fmt.Fprintf(b, "fleet: %s, %d to %d instances\n", r.Name, r.MinInstances, r.MaxInstances)
	for _, n := range rep.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(b, "instance: %s\n", rep.Instance)
	fmt.Fprintf(tw, "\ntime\tserving\tstarting\toffered rps\trps/instance\tmetric (10-s max)\tin flight\tp%d TTFAB ms\tshed rps\tSLO\t\n", rep.SLOPercentile)
	for _, m := range r.Minutes {
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
	fmt.Fprintln(b, "\nSCALING")
	if len(r.Events) == 0 {
		fmt.Fprintln(b, "  none")
	}
	for _, e := range r.Events {
		line := fmt.Sprintf("  %s  %d → %d  %s", simClock(e.AtS), e.From, e.To, e.Reason)
		if e.ServingAtS > 0 {
			line += fmt.Sprintf("; serving at %s", simClock(e.ServingAtS))
		}
		fmt.Fprintln(b, line)
	}
	if sp := rep.Spread; sp != nil {
		fmt.Fprintf(b, "\nSCATTERED (%d runs with the alarm's 10-s datapoints drawn as qmax measured them; the verdict is the run above)\n", sp.Runs)
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
		fmt.Fprintf(b, "  first scale-out        %s\n", first)
		fmt.Fprintf(b, "  peak instances         %d to %d\n", sp.PeakInstancesMin, sp.PeakInstancesMax)
		fmt.Fprintf(b, "  runs with a violation  %d of %d\n", sp.ViolationRuns, sp.Runs)
	}
	fmt.Fprintln(b, "\nTOTALS")
	fmt.Fprintf(b, "  SLO-violation minutes  %d of %d\n", r.ViolationMinutes, len(r.Minutes))
	fmt.Fprintf(b, "  flaps                  %d (a scale-in followed by a scale-out within T_plan)\n", len(r.Flaps))
	fmt.Fprintf(b, "  requests shed (503)    %.0f of %.0f (%s%%)\n", r.Shed, r.Offered, simRound(100*r.Shed/math.Max(r.Offered, 1)))
	fmt.Fprintf(b, "  instance-hours         %s (peak %d instances)\n", simRound(r.InstanceHours), r.PeakInstances)
	fmt.Fprintf(b, "  cost                   %s\n", simUSD(r.Cost))
	if r.Worst != nil {
		fmt.Fprintf(b, "  worst minute           %s: %s\n", simClock(float64(r.Worst.Minute*60)), r.Worst.Why)
	}
	fmt.Fprintln(b, "\nCOMPARISON (same trace)")
	tw = tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  configuration\tfleet\tviolation min\tflaps\tshed\tinstance-hours\tcost\tholds\thow sized")
	for i, c := range rep.Comparison {
		meets := "no"
		if c.MeetsSLO {
			meets = "yes"
		}
		if i == rep.Cheapest {
			meets += " (cheapest)"
		}
		fmt.Fprintf(tw, "  %s\t%d-%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\n", c.Name, c.MinInstances, c.MaxInstances, c.ViolationMinutes, c.Flaps, c.Shed,
			simRound(c.InstanceHours), simUSD(c.Cost), meets, c.Note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if rep.OracleRatio > 0 && r.Holds() {
		fmt.Fprintf(b, "\noracle instance-hours ÷ plan instance-hours: %s (1 is the limit of any reactive fleet)\n", simRound(rep.OracleRatio))
	}
	if rep.Cheapest >= 0 {
		c := rep.Comparison[rep.Cheapest]
		fmt.Fprintf(b, "\nRESULT  the cheapest configuration that meets the SLO on this trace: %s, %s\n", c.Name, simUSD(c.Cost))
	} else {
		fmt.Fprintln(b, "\nRESULT  no configuration compared meets the SLO on this trace: raise the fleet maximum, measure a faster instance, or lower the load")
	}
	if !rep.Measured {
		fmt.Fprintln(b, "These numbers are NOT MEASURED: they come from --what-if assumptions.")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func simRound(v float64) string { return FormatNumber(math.Round(v*100) / 100) }
