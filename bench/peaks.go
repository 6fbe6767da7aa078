package bench

import (
	"math"
	"sort"
	"time"
)

// AlarmQuantile is the share of a rate's 10-s Maximum datapoints that may fall below the value the scaling alarm
// can count on: InFlightMaxLow takes this quantile of the window's 10-s peaks. A target-tracking alarm scales out
// on three breaching datapoints in a row, so a target set at the mean 10-s peak of a rate is crossed by about
// half of that rate's datapoints and three in a row come minutes late: the demo's surge at 0.9 of one instance's
// capacity read client peaks from 8 to 18 over a minute, half of them below a target set at their mean's level.
// At the 10th percentile nine datapoints in ten breach and three in a row come with probability 0.73 each time
// (docs/design.md, "One instance model").
const AlarmQuantile = 0.1

// PeakStride is the step between the starts of the sliding windows InFlightMaxLow takes peaks over.
const PeakStride = time.Second

// InFlightMaxLow is the q-quantile of the peak number of requests in flight over the slice-long windows in
// [ws, we) that start every PeakStride from ws: the low end of what a slice-long Maximum datapoint of a
// concurrency metric shows at this load, whatever the phase of its grid. A window shorter than slice is one
// window. The quantile is the nearest rank below (the lower order statistic), so few windows err low.
func InFlightMaxLow(recs []Record, ws, we time.Time, slice time.Duration, q float64) float64 {
	if !we.After(ws) || slice <= 0 {
		return 0
	}
	var peaks []float64
	for a := ws; !a.Add(slice).After(we); a = a.Add(PeakStride) {
		_, p := inFlight(recs, a, a.Add(slice))
		peaks = append(peaks, float64(p))
	}
	if len(peaks) == 0 {
		_, p := inFlight(recs, ws, we)
		return float64(p)
	}
	sort.Float64s(peaks)
	i := int(math.Floor(q * float64(len(peaks)-1)))
	return peaks[min(max(i, 0), len(peaks)-1)]
}
