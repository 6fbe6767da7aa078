package measure

import (
	"errors"
	"fmt"
	"image/color"
	"math"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/speech-infra/speech-infra/capacity"
)

// rateFrame lays out the rate staircase (docs/design.md, "Open loop, too"): per offered rate, the requests in
// flight as the client counted them (time-averaged, and the mean of the 10-s peaks the scaling alarm's Maximum
// sees) and as CloudWatch published them, with the highest closed-loop throughput as a vertical line and the
// steps that missed the SLO crossed. It shows where in-flight stops rising gently and jumps: the knee a
// saturating instance has. The legend sits beside the data (chartFrame).
func rateFrame(q *capacity.QMax) (*chartFrame, error) {
	if len(q.RateSteps) == 0 {
		return nil, errors.New("draw the rate chart: the artifact has no rate steps")
	}
	var mean, max10, cw, failed plotter.XYs
	maxY, maxX := 1.0, q.HighestThroughputRPS
	for _, s := range q.RateSteps {
		x := Finite(s.OfferedRPS)
		mean = append(mean, plotter.XY{X: x, Y: Finite(s.InFlightMean)})
		max10 = append(max10, plotter.XY{X: x, Y: Finite(s.InFlightMax10s)})
		if s.CloudWatchMax10s > 0 {
			cw = append(cw, plotter.XY{X: x, Y: Finite(s.CloudWatchMax10s)})
		}
		if !s.MeetsSLO {
			failed = append(failed, plotter.XY{X: x, Y: Finite(s.InFlightMax10s)})
		}
		maxY = math.Max(maxY, math.Max(Finite(s.InFlightMax10s), Finite(s.CloudWatchMax10s)))
		maxX = math.Max(maxX, x)
	}
	f := newChartFrame(fmt.Sprintf("Rate staircase of %s on %s (%s, Poisson arrivals)", q.Model, q.InstanceType, q.Transport), chartWidth, chartHeight)
	p := f.Plot
	p.X.Label.Text = "offered rate (requests/s, open loop)"
	p.Y.Label.Text = "requests in flight"
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = maxX*1.05, maxY*1.08
	p.X.Tick.Marker, p.Y.Tick.Marker = plainTicks{}, plainTicks{}
	p.Add(plotter.NewGrid())
	for _, series := range []struct {
		name  string
		xys   plotter.XYs
		color color.Color
		shape draw.GlyphDrawer
	}{
		{"in flight, time-averaged\n(client)", mean, ColorTTFAB, draw.CircleGlyph{}},
		{"in flight, mean of 10-s peaks\n(client)", max10, ColorStall, draw.SquareGlyph{}},
		{"ConcurrentRequestsPerModel,\nmean of 10-s Maximum (CloudWatch)", cw, ColorQMax, draw.TriangleGlyph{}},
	} {
		if len(series.xys) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(series.xys)
		if err != nil {
			return nil, fmt.Errorf("draw the rate chart: %s: %w", series.name, err)
		}
		line.Color, points.Color, points.Shape = series.color, series.color, series.shape
		p.Add(line, points)
		f.add(series.name, line, points)
	}
	if len(failed) > 0 {
		cross, err := plotter.NewScatter(failed)
		if err != nil {
			return nil, fmt.Errorf("draw the rate chart: failing steps: %w", err)
		}
		cross.Shape, cross.Color, cross.Radius = draw.CrossGlyph{}, ColorSLO, vg.Points(5)
		p.Add(cross)
		f.add("step missed the SLO", cross)
	}
	if q.HighestThroughputRPS > 0 {
		v, err := plotter.NewLine(plotter.XYs{{X: q.HighestThroughputRPS, Y: 0}, {X: q.HighestThroughputRPS, Y: p.Y.Max}})
		if err != nil {
			return nil, fmt.Errorf("draw the rate chart: highest throughput: %w", err)
		}
		v.Color, v.Width, v.Dashes = ColorSLO, vg.Points(1.5), []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(v)
		f.add(fmt.Sprintf("highest closed-loop throughput\n%.3g rps", q.HighestThroughputRPS), v)
	}
	return f, nil
}

// renderRateChartSVG draws the rate staircase (rateFrame) as SVG and returns the document.
func renderRateChartSVG(q *capacity.QMax) ([]byte, error) {
	f, err := rateFrame(q)
	if err != nil {
		return nil, err
	}
	doc, err := f.render()
	if err != nil {
		return nil, fmt.Errorf("draw the rate chart: %w", err)
	}
	return doc, nil
}
