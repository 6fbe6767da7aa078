package traffic

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// WriteText prints the description for people: the trace, its rate, peaks, surge ratio and burst factor, the
// daily and weekly profiles and the notes.
func (d Description) WriteText(out io.Writer) error {
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	num := func(v float64) string { return strconv.FormatFloat(math.Round(v*1000)/1000, 'f', -1, 64) }
	at := func(sec int) string {
		s := (time.Duration(sec) * time.Second).String()
		if d.Start != "" {
			if t, err := time.Parse(time.RFC3339Nano, d.Start); err == nil {
				s += " (" + t.Add(time.Duration(sec)*time.Second).Format(time.RFC3339) + ")"
			}
		}
		return s
	}
	kind := "request trace (every request's time)"
	if d.Kind == KindRate {
		kind = fmt.Sprintf("rate trace, step %s", time.Duration(d.StepS*float64(time.Second)))
	}
	fmt.Fprintf(w, "trace\t%s: %s\n", d.Name, kind)
	start := "not given (seconds since the start)"
	if d.Start != "" {
		start = d.Start
	}
	fmt.Fprintf(w, "start\t%s\n", start)
	fmt.Fprintf(w, "duration\t%s, %s requests\n", time.Duration(d.DurationS*float64(time.Second)), num(d.Requests))
	fmt.Fprintf(w, "mean rate\t%s rps\n", num(d.MeanRPS))
	for _, p := range []struct {
		name string
		p    *Peak
	}{{"peak at 1 s", d.Peak1s}, {"peak at 10 s", d.Peak10s}, {"peak at 1 min", d.Peak1m}} {
		if p.p == nil {
			fmt.Fprintf(w, "%s\tthe trace is shorter than the window\n", p.name)
			continue
		}
		fmt.Fprintf(w, "%s\t%s rps from %s\n", p.name, num(p.p.RPS), at(p.p.AtS))
	}
	if s := d.Surge; s != nil {
		var qs []string
		for _, q := range SurgeQuantiles {
			name := fmt.Sprintf("p%g", math.Round(q*1000)/10)
			qs = append(qs, name+" "+num(s.Quantiles[name]))
		}
		fmt.Fprintf(w, "surge ratio at T_plan %s\t%s; max %s (start minute %s)\n", time.Duration(s.TPlanS*float64(time.Second)), strings.Join(qs, ", "), num(s.Max), at(s.MaxAtS))
		fmt.Fprintf(w, "\tover %d start minutes", s.StartMinutes)
		if s.LeftOut > 0 {
			fmt.Fprintf(w, "; %d left out (the minute before had no request)", s.LeftOut)
		}
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, "surge ratio\tnone: %s\n", d.SurgeTooShort)
	}
	if b := d.Burst; b != nil {
		fmt.Fprintf(w, "burst factor\t%s (10-s peak %s rps ÷ %s rps, the mean of the 5 minutes from %s)\n", num(b.Factor), num(b.Peak10sRPS), num(b.MeanRPS), at(b.WindowAtS))
	} else {
		fmt.Fprintf(w, "burst factor\tnone: %s\n", d.BurstNone)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	if d.Daily.MeanRPS == nil {
		fmt.Fprintf(out, "daily profile: too short: %s\n", d.Daily.TooShort)
	} else {
		fmt.Fprintln(out, "daily profile (mean rps per hour of day, UTC):")
		for h := 0; h < 24; h += 6 {
			var cells []string
			for k := h; k < h+6; k++ {
				cells = append(cells, fmt.Sprintf("%02d:00 %8s", k, num(d.Daily.MeanRPS[k])))
			}
			fmt.Fprintf(out, "  %s\n", strings.Join(cells, "   "))
		}
	}
	if d.Weekly.MeanRPS == nil {
		fmt.Fprintf(out, "weekly profile: too short: %s\n", d.Weekly.TooShort)
	} else {
		var cells []string
		for i, name := range []string{"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"} {
			cells = append(cells, name+" "+num(d.Weekly.MeanRPS[i]))
		}
		fmt.Fprintf(out, "weekly profile (mean rps per weekday, UTC): %s\n", strings.Join(cells, ", "))
	}
	for _, n := range d.Notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	return nil
}
