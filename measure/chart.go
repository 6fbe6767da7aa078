package measure

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
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
const chartWidth, chartHeight = 24 * vg.Centimeter, 12 * vg.Centimeter

var (
	ColorTTFAB = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	ColorStall = color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
	ColorSLO   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	ColorQMax  = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
)

// chartFrame is a chart laid out so that nothing covers the data and no text leaves the canvas: the title and
// the plot (axes, data) on the left, the legend in a column of its own on the right, beside the data area.
// The plot's own legend stays empty; entries go to Legend through add.
type chartFrame struct {
	Plot   *plot.Plot
	Legend plot.Legend
	// Width and Height are the canvas size.
	Width, Height vg.Length
	// entries are the legend's texts (plot.Legend keeps its own unexported).
	entries []string
}

// Spacing of the frame: the gap between the plot and the legend column, and the margin kept blank at every
// edge of the canvas.
const frameGap, frameMargin = 0.4 * vg.Centimeter, 0.2 * vg.Centimeter

// newChartFrame returns a frame of the given size whose title is the given text.
func newChartFrame(title string, width, height vg.Length) *chartFrame {
	f := &chartFrame{Plot: plot.New(), Legend: plot.NewLegend(), Width: width, Height: height}
	f.Plot.Title.Text = title
	f.Plot.Title.Padding = vg.Points(6)
	f.Legend.Top, f.Legend.Left = true, true
	f.Legend.TextStyle.Font.Size = vg.Points(10)
	f.Legend.Padding = vg.Points(3)
	return f
}

// add adds a legend entry.
func (f *chartFrame) add(name string, thumbs ...plot.Thumbnailer) {
	f.Legend.Add(name, thumbs...)
	f.entries = append(f.entries, name)
}

// legendSize is the width and height the legend's entries take.
func (f *chartFrame) legendSize() vg.Point {
	var size vg.Point
	var entry vg.Length
	for _, e := range f.entries {
		r := f.Legend.TextStyle.Rectangle(" " + e)
		size.X = max(size.X, f.Legend.ThumbnailWidth+r.Max.X)
		entry = max(entry, f.Legend.TextStyle.Rectangle(e).Max.Y)
	}
	if n := vg.Length(len(f.entries)); n > 0 {
		size.Y = n*entry + (n-1)*f.Legend.Padding + f.Legend.TextStyle.FontExtents().Descent
	}
	return size
}

// chartAreas are the parts of a laid-out chart, in canvas coordinates.
type chartAreas struct {
	// Plot is where the plot draws its title, axes and data; Data is its data area.
	Plot, Data draw.Canvas
	// Legend is the legend's column; LegendBox is the rectangle its entries cover.
	Legend    draw.Canvas
	LegendBox vg.Rectangle
	// Title is the rectangle the title covers.
	Title vg.Rectangle
}

// layout fits the title into the plot's width (a smaller font, then a second line) and returns the areas of
// canvas c.
func (f *chartFrame) layout(c draw.Canvas) chartAreas {
	var a chartAreas
	legend := f.legendSize()
	reserve := vg.Length(0)
	if len(f.entries) > 0 {
		reserve = legend.X + frameGap + frameMargin
	}
	a.Plot = draw.Crop(c, frameMargin, -max(reserve, frameMargin), frameMargin, -frameMargin)
	f.fitTitle(a.Plot.Size().X)
	a.Data = f.Plot.DataCanvas(a.Plot)
	a.Legend = draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: a.Plot.Max.X + frameGap, Y: a.Data.Min.Y},
		Max: vg.Point{X: c.Max.X - frameMargin, Y: a.Data.Max.Y},
	}}
	a.LegendBox = vg.Rectangle{
		Min: vg.Point{X: a.Legend.Min.X, Y: a.Legend.Max.Y - legend.Y},
		Max: vg.Point{X: a.Legend.Min.X + legend.X, Y: a.Legend.Max.Y},
	}
	if len(f.entries) == 0 {
		a.LegendBox = vg.Rectangle{}
	}
	title := f.Plot.Title.TextStyle.Rectangle(f.Plot.Title.Text)
	a.Title = vg.Rectangle{
		Min: vg.Point{X: a.Plot.Center().X - title.Size().X/2, Y: a.Plot.Max.Y - title.Size().Y},
		Max: vg.Point{X: a.Plot.Center().X + title.Size().X/2, Y: a.Plot.Max.Y},
	}
	return a
}

// fitTitle makes the title fit width: a smaller font, down to 10 points, then as many lines as it needs,
// broken between words.
func (f *chartFrame) fitTitle(width vg.Length) {
	t := &f.Plot.Title
	for t.TextStyle.Font.Size > vg.Points(10) && t.TextStyle.Width(t.Text) > width {
		t.TextStyle.Font.Size -= vg.Points(1)
	}
	if t.TextStyle.Width(t.Text) <= width || strings.Contains(t.Text, "\n") {
		return
	}
	var lines []string
	line := ""
	for _, w := range strings.Fields(t.Text) {
		if line != "" && t.TextStyle.Width(line+" "+w) > width {
			lines, line = append(lines, line), w
			continue
		}
		line = strings.TrimPrefix(line+" "+w, " ")
	}
	t.Text = strings.Join(append(lines, line), "\n")
}

// draw draws the chart on c and returns its areas.
func (f *chartFrame) draw(c draw.Canvas) chartAreas {
	a := f.layout(c)
	f.Plot.Draw(a.Plot)
	if len(f.entries) > 0 {
		f.Legend.Draw(a.Legend)
	}
	return a
}

// render draws the chart as an SVG document.
func (f *chartFrame) render() ([]byte, error) {
	c := vgsvg.New(f.Width, f.Height)
	f.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// staircaseFrame lays out the staircase: p95 TTFAB and p95 stall against concurrency as step lines, ticks at
// the measured concurrencies (a log scale when the ladder is geometric), the y-axis from 0 to just above the
// highest value or bound with the SLO marked on it, the SLO and stall budget as horizontal lines, Q_max as a
// vertical line, failing steps as crosses.
func staircaseFrame(c staircaseChart) (*chartFrame, error) {
	if len(c.Steps) == 0 {
		return nil, errors.New("draw the staircase chart: no step was measured")
	}
	steps := append([]chartStep(nil), c.Steps...)
	sort.Slice(steps, func(i, j int) bool { return steps[i].Concurrency < steps[j].Concurrency })
	ttfab := make(plotter.XYs, len(steps))
	stall := make(plotter.XYs, len(steps))
	var failed plotter.XYs
	top := math.Max(c.SLOMs, c.StallBudgetMs)
	ladder := make([]float64, len(steps))
	for i, s := range steps {
		ladder[i] = float64(max(s.Concurrency, 1))
		ttfab[i] = plotter.XY{X: ladder[i], Y: Finite(s.TTFABMs)}
		stall[i] = plotter.XY{X: ladder[i], Y: Finite(s.StallMs)}
		top = math.Max(top, math.Max(ttfab[i].Y, stall[i].Y))
		if !s.Pass {
			failed = append(failed, ttfab[i])
		}
	}
	if top <= 0 {
		top = 1
	}

	f := newChartFrame(c.Title, chartWidth, chartHeight)
	p := f.Plot
	p.X.Label.Text = "concurrency (requests in flight, closed loop)"
	p.Y.Label.Text = fmt.Sprintf("p%d (ms)", c.Percentile)
	lo, hi := ladder[0], ladder[len(ladder)-1]
	if hi/lo >= 8 {
		p.X.Scale = plot.LogScale{}
		p.X.Min, p.X.Max = lo/1.25, hi*1.25
	} else {
		p.X.Min, p.X.Max = 0, hi*1.05+1
	}
	p.X.Tick.Marker = ladderTicks{values: ladder, log: hi/lo >= 8}
	p.Y.Min, p.Y.Max = 0, top*1.08
	p.Y.Tick.Marker = markedTicks{mark: c.SLOMs, label: "SLO " + FormatFloat(c.SLOMs)}
	p.Add(plotter.NewGrid())

	for _, series := range []struct {
		name  string
		xys   plotter.XYs
		color color.Color
		shape draw.GlyphDrawer
	}{
		{fmt.Sprintf("p%d TTFAB", c.Percentile), ttfab, ColorTTFAB, draw.CircleGlyph{}},
		{fmt.Sprintf("p%d stall", c.Percentile), stall, ColorStall, draw.SquareGlyph{}},
	} {
		line, points, err := plotter.NewLinePoints(series.xys)
		if err != nil {
			return nil, fmt.Errorf("draw the staircase chart: %s: %w", series.name, err)
		}
		line.StepStyle = plotter.PostStep
		line.Color, points.Color, points.Shape = series.color, series.color, series.shape
		p.Add(line, points)
		f.add(series.name, line, points)
	}
	if len(failed) > 0 {
		cross, err := plotter.NewScatter(failed)
		if err != nil {
			return nil, fmt.Errorf("draw the staircase chart: failing steps: %w", err)
		}
		cross.Shape, cross.Color, cross.Radius = draw.CrossGlyph{}, ColorSLO, vg.Points(5)
		p.Add(cross)
		f.add("step failed", cross)
	}

	slo, err := Horizontal(p.X.Min, p.X.Max, c.SLOMs, ColorSLO)
	if err != nil {
		return nil, err
	}
	p.Add(slo)
	f.add(fmt.Sprintf("SLO p%d TTFAB ≤ %s ms", c.Percentile, FormatFloat(c.SLOMs)), slo)
	if c.StallBudgetMs > 0 && c.StallBudgetMs != c.SLOMs {
		budget, err := Horizontal(p.X.Min, p.X.Max, c.StallBudgetMs, ColorStall)
		if err != nil {
			return nil, err
		}
		budget.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(budget)
		f.add(fmt.Sprintf("stall budget %s ms", FormatFloat(c.StallBudgetMs)), budget)
	}
	if c.QMax > 0 {
		q, err := plotter.NewLine(plotter.XYs{{X: float64(c.QMax), Y: 0}, {X: float64(c.QMax), Y: p.Y.Max}})
		if err != nil {
			return nil, fmt.Errorf("draw the staircase chart: Q_max: %w", err)
		}
		q.Color, q.Width = ColorQMax, vg.Points(1.5)
		q.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		p.Add(q)
		f.add(fmt.Sprintf("Q_max = %d", c.QMax), q)
	} else {
		f.add("no step met the SLO")
	}
	if c.LowestFail == 0 {
		f.add("no step failed: Q_max is a lower bound")
	}
	return f, nil
}

// renderChartSVG draws the staircase (staircaseFrame) as SVG and returns the document.
func renderChartSVG(c staircaseChart) ([]byte, error) {
	f, err := staircaseFrame(c)
	if err != nil {
		return nil, err
	}
	doc, err := f.render()
	if err != nil {
		return nil, fmt.Errorf("draw the staircase chart: %w", err)
	}
	return doc, nil
}

// ladderTicks marks the measured concurrencies on the x-axis: a labelled tick at each, unless its label would
// sit too close to the previous labelled one (then an unlabelled tick).
type ladderTicks struct {
	values []float64
	// log says the axis is on a log scale: closeness is measured in its ratio, not its difference.
	log bool
}

// Ticks implements plot.Ticker.
func (t ladderTicks) Ticks(lo, hi float64) []plot.Tick {
	pos := func(v float64) float64 { return v }
	if t.log {
		pos = math.Log
	}
	minGap := (pos(hi) - pos(lo)) / 16
	var ticks []plot.Tick
	last := math.Inf(-1)
	for _, v := range t.values {
		if v < lo || v > hi || (len(ticks) > 0 && ticks[len(ticks)-1].Value == v) {
			continue
		}
		tick := plot.Tick{Value: v}
		if pos(v)-last >= minGap {
			tick.Label, last = strconv.FormatFloat(v, 'f', -1, 64), pos(v)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

// plainTicks label about six values at a round step (1, 2 or 5 times a power of ten), as plainly as the values
// allow ("250", not "250.00"), with an unlabelled tick between two labelled ones.
type plainTicks struct{}

// Ticks implements plot.Ticker.
func (plainTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return plot.DefaultTicks{}.Ticks(lo, hi)
	}
	raw := (hi - lo) / 6
	step := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*step >= raw {
			step *= m
			break
		}
	}
	var ticks []plot.Tick
	for i := math.Ceil(lo / (step / 2)); i*step/2 <= hi; i++ {
		v := i * step / 2
		tick := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			tick.Label = strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
		}
		ticks = append(ticks, tick)
	}
	return ticks
}

// markedTicks are plainTicks plus a labelled one at mark; labels too close to it are dropped.
type markedTicks struct {
	mark  float64
	label string
}

// Ticks implements plot.Ticker.
func (t markedTicks) Ticks(lo, hi float64) []plot.Tick {
	ticks := plainTicks{}.Ticks(lo, hi)
	if t.mark < lo || t.mark > hi {
		return ticks
	}
	out := ticks[:0]
	for _, tk := range ticks {
		if tk.Label != "" && math.Abs(tk.Value-t.mark) < (hi-lo)/14 {
			tk.Label = ""
		}
		out = append(out, tk)
	}
	return append(out, plot.Tick{Value: t.mark, Label: t.label})
}

// Horizontal is a line at height y from x0 to x1.
func Horizontal(x0, x1, y float64, c color.Color) (*plotter.Line, error) {
	l, err := plotter.NewLine(plotter.XYs{{X: x0, Y: y}, {X: x1, Y: y}})
	if err != nil {
		return nil, fmt.Errorf("draw the staircase chart: line at %g: %w", y, err)
	}
	l.Color, l.Width = c, vg.Points(1.5)
	return l, nil
}

// Finite maps what a chart cannot draw (NaN, ±Inf, negative) to 0.
func Finite(x float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0
	}
	return x
}

func FormatFloat(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
