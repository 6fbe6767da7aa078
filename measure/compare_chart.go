package measure

import (
	"bytes"
	"errors"
	"fmt"
	"strings"

	"github.com/speech-infra/speech-infra/capacity"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Size of the comparison chart.
const compareChartWidth, compareChartHeight = 20 * vg.Centimeter, 12 * vg.Centimeter

// RenderCompareChart draws cost per day against T_total, one labelled point per measured type (the winner
// named in the title), as a PNG.
func RenderCompareChart(rep *capacity.TypeComparison) ([]byte, error) {
	var xys plotter.XYs
	var labels []string
	for _, r := range rep.Rows {
		if r.Error != "" {
			continue
		}
		xys = append(xys, plotter.XY{X: r.TTotalS, Y: r.CostPerDayUSD})
		l := r.InstanceType
		if !r.Holds {
			l += " (does not hold)"
		}
		labels = append(labels, l)
	}
	if len(xys) == 0 {
		return nil, errors.New("no type was measured")
	}
	trace, _, _ := strings.Cut(rep.Trace, ":")
	title := fmt.Sprintf("%s: cost per day on the %s trace (peak %s rps) against T_total, one point per instance type", rep.Model, trace, capacity.FormatNumber(rep.PeakRPS))
	if rep.Winner != "" {
		title += "; the cheapest that holds the SLO: " + rep.Winner
	}
	f := newChartFrame(title, compareChartWidth, compareChartHeight)
	p := f.Plot
	p.X.Label.Text = "T_total (s)"
	p.Y.Label.Text = "cost per day (USD)"
	sc, err := plotter.NewScatter(xys)
	if err != nil {
		return nil, err
	}
	sc.GlyphStyle.Color = ColorTTFAB
	sc.GlyphStyle.Radius = vg.Points(4)
	sc.GlyphStyle.Shape = draw.CircleGlyph{}
	lb, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return nil, err
	}
	for i := range lb.TextStyle {
		lb.TextStyle[i].XAlign = draw.XLeft
		lb.Offset = vg.Point{X: vg.Points(6), Y: vg.Points(-4)}
	}
	p.Add(sc, lb, plotter.NewGrid())
	// Room around the points for their labels, and 0 in view on both axes.
	p.X.Min, p.Y.Min = 0, 0
	for _, xy := range xys {
		p.X.Max = max(p.X.Max, xy.X*1.6+1)
		p.Y.Max = max(p.Y.Max, xy.Y*1.2+0.01)
	}
	c := vgimg.PngCanvas{Canvas: vgimg.New(compareChartWidth, compareChartHeight)}
	f.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := c.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
