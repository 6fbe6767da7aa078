package traffic

import (
	"bytes"
	"fmt"
	"image/color"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// chartStep is the chart's bin: the rate per 10 s.
const chartStep = 10

// Chart draws the series' rate per 10 s over time (bins of 10 s from the start; a last shorter bin is its own
// mean) as an SVG document. The time axis is in minutes for a trace under 3 hours, else in hours.
func Chart(s Series) ([]byte, error) {
	n := len(s.PerSecond)
	if n == 0 {
		return nil, fmt.Errorf("draw %s: the trace is empty", s.Name)
	}
	unit, unitName := time.Hour, "hours"
	if s.Duration() < 3*time.Hour {
		unit, unitName = time.Minute, "minutes"
	}
	xys := make(plotter.XYs, 0, n/chartStep+1)
	for from := 0; from < n; from += chartStep {
		to := min(from+chartStep, n)
		sum := 0.0
		for _, v := range s.PerSecond[from:to] {
			sum += v
		}
		x := (time.Duration(from) * time.Second).Seconds() / unit.Seconds()
		xys = append(xys, plotter.XY{X: x, Y: sum / float64(to-from)})
	}
	p := plot.New()
	title := "Request rate per 10 s: " + s.Name
	if !s.Start.IsZero() {
		title += " (from " + s.Start.Format(time.RFC3339) + ")"
	}
	p.Title.Text = title
	p.X.Label.Text = unitName + " since the start"
	p.Y.Label.Text = "requests per second"
	p.Y.Min = 0
	p.Add(plotter.NewGrid())
	line, err := plotter.NewLine(xys)
	if err != nil {
		return nil, fmt.Errorf("draw %s: %w", s.Name, err)
	}
	line.Color = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	line.Width = vg.Points(0.8)
	p.Add(line)
	if s.Step > chartStep*time.Second {
		p.Legend.Add(fmt.Sprintf("the trace's step is %s: no finer than that", s.Step), line)
		p.Legend.Top = true
	}
	canvas := vgsvg.New(24*vg.Centimeter, 10*vg.Centimeter)
	p.Draw(draw.New(canvas))
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("draw %s: %w", s.Name, err)
	}
	return buf.Bytes(), nil
}
