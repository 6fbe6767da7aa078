package harness

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/speech-infra/speech-infra/internal/atomicfile"
)

// Series is one named line of a Chart.
type Series struct {
	Name   string
	Points []Point
}

// Point is one (x, y) value.
type Point struct{ X, Y float64 }

// Chart is a line chart with points, optionally with horizontal reference lines (goals, budgets).
type Chart struct {
	Title, XLabel, YLabel string
	Series                []Series
	// Lines are horizontal reference lines, each at its Y with its name in the legend.
	Lines []HLine
	// LogX puts the x axis on a log scale (concurrency 1 to 1000).
	LogX bool
}

// HLine is a horizontal reference line.
type HLine struct {
	Name string
	Y    float64
}

var lineRed = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}

// SVG renders the chart as SVG (20 × 12 cm).
func (c Chart) SVG() ([]byte, error) {
	if len(c.Series) == 0 {
		return nil, errors.New("draw chart " + c.Title + ": no series")
	}
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text, p.Y.Label.Text = c.XLabel, c.YLabel
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	p.Y.Min = 0
	xmin, xmax := 0.0, 0.0
	first := true
	for i, s := range c.Series {
		if len(s.Points) == 0 {
			continue
		}
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: pt.X, Y: pt.Y}
			if first || pt.X < xmin {
				xmin = pt.X
			}
			if first || pt.X > xmax {
				xmax = pt.X
			}
			first = false
		}
		line, points, err := plotter.NewLinePoints(xys)
		if err != nil {
			return nil, fmt.Errorf("draw chart %s: series %s: %w", c.Title, s.Name, err)
		}
		line.Color, points.Color, points.Shape = plotutil.Color(i), plotutil.Color(i), plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(s.Name, line, points)
	}
	if first {
		return nil, errors.New("draw chart " + c.Title + ": every series is empty")
	}
	for _, h := range c.Lines {
		l, err := plotter.NewLine(plotter.XYs{{X: xmin, Y: h.Y}, {X: xmax, Y: h.Y}})
		if err != nil {
			return nil, fmt.Errorf("draw chart %s: line %s: %w", c.Title, h.Name, err)
		}
		l.Color, l.Dashes = lineRed, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(h.Name, l)
	}
	w, err := p.WriterTo(20*vg.Centimeter, 12*vg.Centimeter, "svg")
	if err != nil {
		return nil, fmt.Errorf("draw chart %s: %w", c.Title, err)
	}
	var buf bytes.Buffer
	if _, err := w.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("draw chart %s: %w", c.Title, err)
	}
	return buf.Bytes(), nil
}

// WriteSVG renders the chart and writes it to path atomically.
func (c Chart) WriteSVG(path string) error {
	svg, err := c.SVG()
	if err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, svg, 0o644); err != nil {
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	return nil
}

// Bars is a grouped bar chart: one group per label, one bar per series value.
type Bars struct {
	Title, YLabel string
	Labels        []string
	// Values[i] is series i, one value per label; Names[i] its legend entry.
	Names  []string
	Values [][]float64
	Lines  []HLine
}

// WriteSVG renders the bars and writes them to path atomically.
func (b Bars) WriteSVG(path string) error {
	if len(b.Values) == 0 || len(b.Labels) == 0 {
		return errors.New("draw chart " + b.Title + ": no values")
	}
	p := plot.New()
	p.Title.Text = b.Title
	p.Y.Label.Text = b.YLabel
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	w := vg.Points(18)
	for i, vals := range b.Values {
		if len(vals) != len(b.Labels) {
			return fmt.Errorf("draw chart %s: series %d has %d values for %d labels", b.Title, i, len(vals), len(b.Labels))
		}
		bars, err := plotter.NewBarChart(plotter.Values(vals), w)
		if err != nil {
			return fmt.Errorf("draw chart %s: %w", b.Title, err)
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		bars.Offset = w * vg.Length(float64(i)-float64(len(b.Values)-1)/2)
		p.Add(bars)
		if i < len(b.Names) {
			p.Legend.Add(b.Names[i], bars)
		}
	}
	for _, h := range b.Lines {
		l, err := plotter.NewLine(plotter.XYs{{X: -0.5, Y: h.Y}, {X: float64(len(b.Labels)) - 0.5, Y: h.Y}})
		if err != nil {
			return fmt.Errorf("draw chart %s: line %s: %w", b.Title, h.Name, err)
		}
		l.Color, l.Dashes = lineRed, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(l)
		p.Legend.Add(h.Name, l)
	}
	p.NominalX(b.Labels...)
	wt, err := p.WriterTo(20*vg.Centimeter, 12*vg.Centimeter, "svg")
	if err != nil {
		return fmt.Errorf("draw chart %s: %w", b.Title, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("draw chart %s: %w", b.Title, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	return nil
}
