package measure

import (
	"errors"
	"fmt"
	"image/color"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/speech-infra/speech-infra/capacity"
)

var (
	colorPlatform  = color.RGBA{R: 0x7f, G: 0x7f, B: 0x7f, A: 0xff}
	colorContainer = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	colorDominant  = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
)

// waterfallFrame lays out the T_total timeline as a waterfall: one bar per duration, from its From stage's time
// to its To stage's (seconds from the clock start), named on the y-axis by the To stage and its length, top to
// bottom in time order; platform time grey, container time blue, the dominant stage red, each in the legend
// (the dominant one by name). A zero-length stage (reached at the same reading as the one before) is a diamond
// at its time, and its name says "0 s (with the previous)".
func waterfallFrame(t *capacity.TTotal) (*chartFrame, error) {
	if len(t.Durations) == 0 {
		return nil, errors.New("draw the waterfall chart: the timeline has no duration")
	}
	state := ""
	if len(t.MissingStages) > 0 {
		state = ", PARTIAL"
	}
	n := len(t.Durations)
	f := newChartFrame(fmt.Sprintf("T_total of %s on %s: %s (%d → %d instances%s)", t.Model, t.InstanceType, formatTTotal(t), t.FromInstances, t.ToInstances, state),
		chartWidth, vg.Length(max(8, n))*vg.Centimeter*0.9)
	p := f.Plot
	p.X.Label.Text = "seconds since " + t.ClockStart
	names := make([]string, n)
	offset, containerStarted := 0.0, false
	var zero plotter.XYs
	used := map[color.Color]bool{}
	for i, d := range t.Durations {
		y := float64(n - 1 - i) // the first stage on top
		x0, x1 := offset, offset+d.DurationS
		offset = x1
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
		if d.DurationS <= 0 {
			names[n-1-i] = fmt.Sprintf("%s 0 s (with the previous)", d.To)
			zero = append(zero, plotter.XY{X: x0, Y: y})
			continue
		}
		names[n-1-i] = fmt.Sprintf("%s %.1f s", d.To, d.DurationS)
		if x1-x0 < t.TTotalS/1000 {
			x1 = x0 + t.TTotalS/1000 // a very short stage stays visible as a tick
		}
		bar, err := plotter.NewPolygon(plotter.XYs{{X: x0, Y: y - 0.35}, {X: x1, Y: y - 0.35}, {X: x1, Y: y + 0.35}, {X: x0, Y: y + 0.35}})
		if err != nil {
			return nil, fmt.Errorf("draw the waterfall chart: %s: %w", d.To, err)
		}
		bar.Color, bar.LineStyle.Width = c, 0
		p.Add(bar)
		used[c] = true
	}
	p.NominalY(names...)
	p.X.Min, p.X.Max = 0, max(t.TTotalS, offset)*1.02
	if p.X.Max <= 0 {
		p.X.Max = 1
	}
	p.X.Tick.Marker = plainTicks{}
	p.Add(plotter.NewGrid())
	for _, e := range []struct {
		c    color.Color
		name string
	}{
		{colorPlatform, "platform (before container_started)"},
		{colorContainer, "container (from container_started)"},
		{colorDominant, fmt.Sprintf("dominant stage: %s %.1f s", t.DominantStage, dominantS(t))},
	} {
		if used[e.c] {
			f.add(e.name, swatch{e.c})
		}
	}
	if len(zero) > 0 {
		marks, err := plotter.NewScatter(zero)
		if err != nil {
			return nil, fmt.Errorf("draw the waterfall chart: zero-length stages: %w", err)
		}
		marks.Shape, marks.Color, marks.Radius = draw.PyramidGlyph{}, color.Black, vg.Points(4)
		p.Add(marks)
		f.add("zero-length stage (0 s)", marks)
	}
	return f, nil
}

// dominantS is the length of the dominant stage's duration.
func dominantS(t *capacity.TTotal) float64 {
	for _, d := range t.Durations {
		if d.To == t.DominantStage {
			return d.DurationS
		}
	}
	return 0
}

// swatch is a legend thumbnail filled with one colour, as the waterfall's bars are.
type swatch struct{ color color.Color }

// Thumbnail implements plot.Thumbnailer.
func (s swatch) Thumbnail(c *draw.Canvas) {
	r := c.Rectangle
	h := r.Size().Y
	r.Min.Y += h * 0.15
	r.Max.Y -= h * 0.15
	c.SetColor(s.color)
	c.Fill(r.Path())
}

// renderWaterfallSVG draws the waterfall (waterfallFrame) as SVG and returns the document.
func renderWaterfallSVG(t *capacity.TTotal) ([]byte, error) {
	f, err := waterfallFrame(t)
	if err != nil {
		return nil, err
	}
	doc, err := f.render()
	if err != nil {
		return nil, fmt.Errorf("draw the waterfall chart: %w", err)
	}
	return doc, nil
}
