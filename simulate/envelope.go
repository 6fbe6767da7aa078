package simulate

import (
	"fmt"
	"math"
	"time"
)

// Growth is the envelope's surge: from trough, the rate grows by the factor s per tPlan until peak, is held
// for hold, then falls at the same pace back to trough and is held for hold again, sampled every step.
func Growth(trough, peak, s float64, tPlan, hold, step time.Duration) Trace {
	up := time.Duration(0)
	if s > 1 && peak > trough && trough > 0 {
		up = time.Duration(math.Log(peak/trough) / math.Log(s) * float64(tPlan))
	}
	up = (up + step - 1) / step * step
	total := up + hold + up + hold
	rate := func(t time.Duration) float64 {
		g := func(x time.Duration) float64 {
			if up == 0 {
				return peak
			}
			return math.Min(peak, trough*math.Pow(s, float64(x)/float64(tPlan)))
		}
		switch {
		case t < up:
			return g(t + step)
		case t < up+hold:
			return peak
		case t < up+hold+up:
			return g(up + hold + up - t)
		default:
			return trough
		}
	}
	tr := Trace{Name: fmt.Sprintf("growth ×%s per T_plan %s from %s to %s rps and back", num(s), tPlan, num(trough), num(peak)), Duration: total}
	for at := time.Duration(0); at < total; at += step {
		tr.Points = append(tr.Points, Point{At: at, RPS: rate(at)})
	}
	return tr
}

// Hover is load around center: center × (1 + amplitude × sin(2π t / period)) for duration, sampled every step.
func Hover(name string, center, amplitude float64, period, duration, step time.Duration) Trace {
	tr := Trace{Name: name, Duration: (duration + step - 1) / step * step}
	for at := time.Duration(0); at < tr.Duration; at += step {
		mid := at + step/2
		tr.Points = append(tr.Points, Point{At: at, RPS: math.Max(0, center*(1+amplitude*math.Sin(2*math.Pi*float64(mid)/float64(period))))})
	}
	return tr
}
