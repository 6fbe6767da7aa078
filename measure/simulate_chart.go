package measure

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"math"

	"github.com/speech-infra/speech-infra/capacity"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// RenderSimulateSVG draws the timeline of the given plan as three aligned panels against time: offered load,
// instances (serving, and serving plus starting), and p95 TTFAB against the SLO.
func RenderSimulateSVG(rep capacity.Report) ([]byte, error) {
	ms := rep.Plan.Minutes
	if len(ms) == 0 {
		return nil, errors.New("draw the simulation chart: the trace has no minute")
	}
	load, shed := make(plotter.XYs, len(ms)), make(plotter.XYs, len(ms))
	serving, total := make(plotter.XYs, len(ms)), make(plotter.XYs, len(ms))
	ttfab := make(plotter.XYs, len(ms))
	hours := func(m int) float64 { return float64(m) / 60 }
	maxTTFAB := float64(rep.SLOMs)
	for i, m := range ms {
		x := hours(m.Minute)
		load[i] = plotter.XY{X: x, Y: Finite(m.OfferedRPS)}
		shed[i] = plotter.XY{X: x, Y: Finite(m.ShedRPS)}
		serving[i] = plotter.XY{X: x, Y: float64(m.Serving)}
		total[i] = plotter.XY{X: x, Y: float64(m.Serving + m.Starting)}
		ttfab[i] = plotter.XY{X: x, Y: Finite(m.TTFABMs)}
		maxTTFAB = math.Max(maxTTFAB, ttfab[i].Y)
	}
	title := fmt.Sprintf("%s on %s: %s", rep.Model, rep.InstanceType, rep.Plan.Name)
	if !rep.Measured {
		title += " — NOT MEASURED (what-if)"
	}
	panel := func(ylabel string) *plot.Plot {
		p := plot.New()
		p.Y.Label.Text = ylabel
		p.X.Min, p.Y.Min = 0, 0
		p.Add(plotter.NewGrid())
		p.Legend.Top, p.Legend.Left = true, true
		return p
	}
	addLine := func(p *plot.Plot, name string, xys plotter.XYs, c color.Color, dashed bool) error {
		l, err := plotter.NewLine(xys)
		if err != nil {
			return fmt.Errorf("draw the simulation chart: %s: %w", name, err)
		}
		l.Color, l.Width = c, vg.Points(1.2)
		l.StepStyle = plotter.PostStep
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(2)}
		}
		p.Add(l)
		p.Legend.Add(name, l)
		return nil
	}
	pl := panel("requests / s")
	pl.Title.Text = title
	pi := panel("instances")
	pt := panel(fmt.Sprintf("p%d TTFAB (ms)", rep.SLOPercentile))
	pt.X.Label.Text = "hours since the start of the trace"
	pt.Y.Max = maxTTFAB * 1.1
	for _, e := range []error{
		addLine(pl, "offered load", load, ColorTTFAB, false),
		addLine(pl, "shed (503)", shed, ColorSLO, false),
		addLine(pi, "serving + starting", total, ColorStall, true),
		addLine(pi, "serving", serving, ColorQMax, false),
		addLine(pt, fmt.Sprintf("estimated p%d TTFAB", rep.SLOPercentile), ttfab, ColorTTFAB, false),
	} {
		if e != nil {
			return nil, e
		}
	}
	end := hours(ms[len(ms)-1].Minute + 1)
	slo, err := Horizontal(0, end, float64(rep.SLOMs), ColorSLO)
	if err != nil {
		return nil, err
	}
	pt.Add(slo)
	pt.Legend.Add(fmt.Sprintf("SLO %d ms", rep.SLOMs), slo)
	pi.Y.Max = float64(rep.Plan.MaxInstances) + 1
	for _, p := range []*plot.Plot{pl, pi, pt} {
		p.X.Max = end
	}
	const width, height = 24 * vg.Centimeter, 20 * vg.Centimeter
	canvas := vgsvg.New(width, height)
	dc := draw.New(canvas)
	tiles := draw.Tiles{Rows: 3, Cols: 1, PadX: vg.Millimeter, PadY: 2 * vg.Millimeter, PadTop: 2 * vg.Millimeter, PadBottom: 2 * vg.Millimeter, PadLeft: 2 * vg.Millimeter, PadRight: 4 * vg.Millimeter}
	plots := [][]*plot.Plot{{pl}, {pi}, {pt}}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		plots[i][0].Draw(canvases[i][0])
	}
	var buf bytes.Buffer
	if _, err := canvas.WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("draw the simulation chart: %w", err)
	}
	return buf.Bytes(), nil
}
