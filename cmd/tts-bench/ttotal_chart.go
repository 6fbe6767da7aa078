package main

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/speech-infra/speech-infra/capacity"
)

var (
	colorPlatform  = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colorContainer = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorDominant  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// renderWaterfallSVG draws the T_total timeline as a waterfall: one bar per duration, from its From stage's
// time to its To stage's (seconds from the clock start), labelled with the To stage, top to bottom in time
// order; platform time grey, container time blue, the dominant stage red. It returns the SVG document.
func renderWaterfallSVG(t *capacity.TTotal) ([]byte, error) {
	if len(t.Durations) == 0 {
		return nil, errors.New("draw the waterfall chart: the timeline has no duration")
	}
	p := plot.New()
	state := ""
	if len(t.MissingStages) > 0 {
		state = ", PARTIAL"
	}
	p.Title.Text = fmt.Sprintf("T_total of %s on %s: %s (%d → %d instances%s)", t.Model, t.InstanceType, formatTTotal(t), t.FromInstances, t.ToInstances, state)
	p.X.Label.Text = "seconds since " + t.ClockStart
	n := len(t.Durations)
	names := make([]string, n)
	offset, containerStarted := 0.0, false
	for i, d := range t.Durations {
		y := float64(n - 1 - i) // the first stage on top
		names[n-1-i] = fmt.Sprintf("%s %.1f s", d.To, d.DurationS)
		x0, x1 := offset, offset+d.DurationS
		offset = x1
		if x1-x0 < t.TTotalS/1000 {
			x1 = x0 + t.TTotalS/1000 // a zero-length stage stays visible as a tick
		}
		bar, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y - 0.35}, {X: x1, Y: y - 0.35}, {X: x1, Y: y + 0.35}, {X: x0, Y: y + 0.35}})
		if err != nil {
			return nil, fmt.Errorf("draw the waterfall chart: %s: %w", d.To, err)
		}
		if d.From == capacity.StageContainerStarted {
			containerStarted = true
		}
		c := colorPlatform
		if containerStarted {
			c = colorContainer
		}
		if d.To == t.DominantStage {
			c = colorDominant
		}
		bar.Color, bar.LineStyle.Width = c, 0
		p.Add(bar)
	}
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, t.TTotalS*1.02
	wt, err := p.WriterTo(chartWidth, vg.Length(max(8, n))*vg.Centimeter*0.9, "svg")
	if err != nil {
		return nil, fmt.Errorf("draw the waterfall chart: %w", err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("draw the waterfall chart: %w", err)
	}
	return buf.Bytes(), nil
}
