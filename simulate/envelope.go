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

// Sawtooth is load across center that rises at once and falls slowly: each period starts at
// center × (1 + amplitude) and falls linearly to center × (1 − amplitude), then jumps back up; for duration,
// sampled every step (each sample takes the value at its middle).
func Sawtooth(name string, center, amplitude float64, period, duration, step time.Duration) Trace {
	tr := Trace{Name: name, Duration: (duration + step - 1) / step * step}
	for at := time.Duration(0); at < tr.Duration; at += step {
		mid := at + step/2
		phase := float64(mid%period) / float64(period)
		tr.Points = append(tr.Points, Point{At: at, RPS: math.Max(0, center*(1+amplitude*(1-2*phase)))})
	}
	return tr
}

// Staircase is load that jumps at once by the factor s every tPlan: trough during the first tPlan, then
// trough × s, trough × s², … until the next jump would pass peak, when it jumps to peak instead; peak is then
// held for hold.
func Staircase(trough, peak, s float64, tPlan, hold time.Duration) Trace {
	tr := Trace{Name: fmt.Sprintf("staircase ×%s every T_plan %s from %s to %s rps", num(s), tPlan.Round(100*time.Millisecond), num(trough), num(peak))}
	rate, at := trough, time.Duration(0)
	for {
		tr.Points = append(tr.Points, Point{At: at, RPS: rate})
		at += tPlan
		if rate >= peak || !(s > 1) {
			break
		}
		rate = math.Min(peak, rate*s)
	}
	if last := &tr.Points[len(tr.Points)-1]; last.RPS < peak {
		// s ≤ 1: no growth; the last step goes to the peak.
		tr.Points = append(tr.Points, Point{At: at, RPS: peak})
		at += tPlan
	}
	tr.Duration = at - tPlan + hold
	if tr.Duration <= tr.Points[len(tr.Points)-1].At {
		tr.Duration = tr.Points[len(tr.Points)-1].At + time.Second
	}
	return tr
}

// StepUp is load at from until at, then at to until at + after.
func StepUp(name string, from, to float64, at, after time.Duration) Trace {
	return Trace{Name: name, Points: []Point{{At: 0, RPS: from}, {At: at, RPS: to}}, Duration: at + after}
}
