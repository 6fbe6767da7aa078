package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// staircaseChart is what the qmax chart shows: per measured concurrency the TTFAB and stall percentiles, the
// SLO and the stall budget, and where Q_max and the first failing step lie.
type staircaseChart struct {
	// Title names the model, instance type and transport.
	Title string
	// Percentile is the percentile plotted (95).
	Percentile int
	// SLOMs is the TTFAB bound, StallBudgetMs the stall bound, both in milliseconds.
	SLOMs, StallBudgetMs float64
	// QMax is the highest passing concurrency below LowestFail (0 when none passed); LowestFail is 0 when no
	// step failed.
	QMax, LowestFail int
	// Steps are the measured steps, in any order.
	Steps []chartStep
}

// chartStep is one measured step of the staircase.
type chartStep struct {
	Concurrency int
	// TTFABMs and StallMs are the step's percentiles (Percentile) in milliseconds.
	TTFABMs, StallMs float64
	// Pass says whether the step met both bounds.
	Pass bool
}

// Chart size: a landscape page that reads on a laptop screen and in a pull request.
const chartWidth, chartHeight = 20 * vg.Centimeter, 12 * vg.Centimeter

var (
	colorTTFAB = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorStall = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	colorSLO   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	colorQMax  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// renderChartSVG draws the staircase as SVG: p95 TTFAB and p95 stall against concurrency as step lines, the
// SLO as a horizontal line, Q_max as a vertical line, failing steps as crosses. It returns the document.
func renderChartSVG(c staircaseChart) ([]byte, error) {
	if len(c.Steps) == 0 {
		return nil, errors.New("draw the staircase chart: no step was measured")
	}
	steps := append([]chartStep(nil), c.Steps...)
	sort.Slice(steps, func(i, j int) bool { return steps[i].Concurrency < steps[j].Concurrency })
	ttfab := make(plotter.XYs, len(steps))
	stall := make(plotter.XYs, len(steps))
	var failed plotter.XYs
	maxY, maxX := c.SLOMs, float64(steps[len(steps)-1].Concurrency)
	for i, s := range steps {
		ttfab[i] = plotter.XY{X: float64(s.Concurrency), Y: finite(s.TTFABMs)}
		stall[i] = plotter.XY{X: float64(s.Concurrency), Y: finite(s.StallMs)}
		maxY = math.Max(maxY, math.Max(ttfab[i].Y, stall[i].Y))
		if !s.Pass {
			failed = append(failed, ttfab[i])
		}
	}

	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = "concurrency (requests in flight, closed loop)"
	p.Y.Label.Text = fmt.Sprintf("p%d (ms)", c.Percentile)
	p.X.Min, p.Y.Min = 0, 0
	p.X.Max, p.Y.Max = maxX*1.05+1, maxY*1.15
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true

	for _, series := range []struct {
		name  string
		xys   plotter.XYs
		color color.Color
		shape draw.GlyphDrawer
	}{
		{fmt.Sprintf("p%d TTFAB", c.Percentile), ttfab, colorTTFAB, draw.CircleGlyph{}},
		{fmt.Sprintf("p%d stall", c.Percentile), stall, colorStall, draw.SquareGlyph{}},
	} {
		line, points, err := plotter.NewLinePoints(series.xys)
		if err != nil {
			return nil, fmt.Errorf("draw the staircase chart: %s: %w", series.name, err)
		}
		line.StepStyle = plotter.PostStep
		line.Color, points.Color, points.Shape = series.color, series.color, series.shape
		p.Add(line, points)
		p.Legend.Add(series.name, line, points)
	}
	if len(failed) > 0 {
		cross, err := plotter.NewScatter(failed)
		if err != nil {
			return nil, fmt.Errorf("draw the staircase chart: failing steps: %w", err)
		}
		cross.Shape, cross.Color, cross.Radius = draw.CrossGlyph{}, colorSLO, vg.Points(5)
		p.Add(cross)
		p.Legend.Add("step failed", cross)
	}

	slo, err := horizontal(0, p.X.Max, c.SLOMs, colorSLO)
	if err != nil {
		return nil, err
	}
	p.Add(slo)
	p.Legend.Add(fmt.Sprintf("SLO p%d TTFAB ≤ %s ms", c.Percentile, fmtFloat(c.SLOMs)), slo)
	if c.StallBudgetMs > 0 && c.StallBudgetMs != c.SLOMs {
		budget, err := horizontal(0, p.X.Max, c.StallBudgetMs, colorStall)
		if err != nil {
			return nil, err
		}
		budget.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(budget)
		p.Legend.Add(fmt.Sprintf("stall budget %s ms", fmtFloat(c.StallBudgetMs)), budget)
	}
	labels := plotter.XYLabels{}
	if c.QMax > 0 {
		q, err := plotter.NewLine(plotter.XYs{{X: float64(c.QMax), Y: 0}, {X: float64(c.QMax), Y: p.Y.Max}})
		if err != nil {
			return nil, fmt.Errorf("draw the staircase chart: Q_max: %w", err)
		}
		q.Color, q.Width = colorQMax, vg.Points(1.5)
		q.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(q)
		p.Legend.Add(fmt.Sprintf("Q_max = %d", c.QMax), q)
		labels.XYs = append(labels.XYs, plotter.XY{X: float64(c.QMax), Y: p.Y.Max * 0.93})
		labels.Labels = append(labels.Labels, fmt.Sprintf(" Q_max %d", c.QMax))
	} else {
		labels.XYs = append(labels.XYs, plotter.XY{X: 0, Y: p.Y.Max * 0.93})
		labels.Labels = append(labels.Labels, " no step met the SLO")
	}
	if c.LowestFail == 0 {
		labels.XYs = append(labels.XYs, plotter.XY{X: maxX, Y: p.Y.Max * 0.86})
		labels.Labels = append(labels.Labels, "no step failed: Q_max is a lower bound ")
	}
	l, err := plotter.NewLabels(labels)
	if err != nil {
		return nil, fmt.Errorf("draw the staircase chart: labels: %w", err)
	}
	for i := range l.TextStyle {
		l.TextStyle[i].Color = colorQMax
		if labels.XYs[i].X == maxX && c.LowestFail == 0 {
			l.TextStyle[i].XAlign = -1 // right-aligned at the last step
		}
	}
	p.Add(l)

	wt, err := p.WriterTo(chartWidth, chartHeight, "svg")
	if err != nil {
		return nil, fmt.Errorf("draw the staircase chart: %w", err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("draw the staircase chart: %w", err)
	}
	return buf.Bytes(), nil
}

// horizontal is a line at height y from x0 to x1.
func horizontal(x0, x1, y float64, c color.Color) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return nil, fmt.Errorf("draw the staircase chart: line at %g: %w", y, err)
	}
	l.Color, l.Width = c, vg.Points(1.5)
	return l, nil
}

// finite maps what a chart cannot draw (NaN, ±Inf, negative) to 0.
func finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0
	}
	return x
}
