package measure

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/measure/measuretest"
)

func TestChartMarksSLOAndQMax(t *testing.T) {
	doc, err := renderChartSVG(staircaseChart{
		Title: "espeak-ng on local, sagemaker-stream", Percentile: 95, SLOMs: 300, StallBudgetMs: 50, QMax: 4, LowestFail: 8,
		Steps: []chartStep{{8, 900, 120, false}, {1, 40, 0, true}, {2, 80, 3, true}, {4, 210, 20, true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	text := measuretest.SVGText(t, doc)
	for _, want := range []string{"espeak-ng on local, sagemaker-stream", "p95 TTFAB", "p95 stall", "SLO p95 TTFAB ≤ 300 ms",
		"Q_max = 4", "step failed", "stall budget 50 ms", "concurrency (requests in flight, closed loop)"} {
		if !strings.Contains(text, want) {
			t.Errorf("the chart does not say %q; its text is %q", want, text)
		}
	}
	if strings.Contains(text, "lower bound") {
		t.Errorf("a bracketed run is labelled as a lower bound: %q", text)
	}
}

func TestChartWithoutFailureOrPass(t *testing.T) {
	doc, err := renderChartSVG(staircaseChart{Title: "t", Percentile: 95, SLOMs: 1000, QMax: 2, Steps: []chartStep{{1, 40, 0, true}, {2, 50, 0, true}}})
	if err != nil {
		t.Fatal(err)
	}
	if text := measuretest.SVGText(t, doc); !strings.Contains(text, "no step failed: Q_max is a lower bound") {
		t.Errorf("an unbracketed run is not labelled as a lower bound: %q", text)
	}
	doc, err = renderChartSVG(staircaseChart{Title: "t", Percentile: 95, SLOMs: 10, LowestFail: 1, Steps: []chartStep{{1, 400, 0, false}}})
	if err != nil {
		t.Fatal(err)
	}
	if text := measuretest.SVGText(t, doc); !strings.Contains(text, "no step met the SLO") || strings.Contains(text, "Q_max =") {
		t.Errorf("a run where nothing passed must say so and mark no Q_max: %q", text)
	}
	if _, err := renderChartSVG(staircaseChart{Title: "t", Percentile: 95, SLOMs: 10}); err == nil {
		t.Error("a chart of no steps was drawn; want an error")
	}
}

// pngDPI is the resolution the PNG checks render at.
const pngDPI = 96

// renderedChart is a chart drawn as PNG, with where its parts lie.
type renderedChart struct {
	img   image.Image
	areas chartAreas
	frame *chartFrame
}

// renderPNG draws f as a PNG (vgimg), decodes it and returns it with the chart's areas.
// With CHART_PNG_DIR set, each PNG is also kept there, named after the test, for a look.
func renderPNG(t *testing.T, f *chartFrame) renderedChart {
	t.Helper()
	c := vgimg.NewWith(vgimg.UseWH(f.Width, f.Height), vgimg.UseDPI(pngDPI))
	a := f.draw(draw.New(c))
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	if dir := os.Getenv("CHART_PNG_DIR"); dir != "" {
		os.WriteFile(filepath.Join(dir, strings.ReplaceAll(t.Name(), "/", "_")+".png"), buf.Bytes(), 0o644)
	}
	img, err := png.Decode(&buf)
	if err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
	return renderedChart{img: img, areas: a, frame: f}
}

// pixel maps a canvas point to the PNG's pixel (y down).
func (r renderedChart) pixel(pt vg.Point) image.Point {
	s := float64(pngDPI) / 72
	return image.Pt(int(math.Round(float64(pt.X)*s)), r.img.Bounds().Dy()-int(math.Round(float64(pt.Y)*s)))
}

// pixelRect maps a canvas rectangle to the PNG's pixels.
func (r renderedChart) pixelRect(rect vg.Rectangle) image.Rectangle {
	a, b := r.pixel(rect.Min), r.pixel(rect.Max)
	return image.Rect(a.X, b.Y, b.X, a.Y)
}

// checkLayout asserts what every chart promises: the legend box (in pixels) lies inside the image and overlaps
// neither the data area nor any plotted point; the title lies inside the image; nothing is cut at the image's
// edge (its outermost pixels are all background); the legend box is really drawn (it holds dark text pixels).
func checkLayout(t *testing.T, r renderedChart, points []plotter.XY) {
	t.Helper()
	bounds := r.img.Bounds()
	legend := r.pixelRect(r.areas.LegendBox)
	data := r.pixelRect(r.areas.Data.Rectangle)
	if legend.Empty() {
		t.Fatal("the chart has no legend")
	}
	if !legend.In(bounds) {
		t.Errorf("legend box %v is not inside the image %v", legend, bounds)
	}
	if legend.Overlaps(data) {
		t.Errorf("legend box %v overlaps the data area %v", legend, data)
	}
	if title := r.pixelRect(r.areas.Title); !title.In(bounds) {
		t.Errorf("title box %v (%q) is not inside the image %v", title, r.frame.Plot.Title.Text, bounds)
	}
	x, y := r.frame.Plot.Transforms(&r.areas.Data)
	for _, p := range points {
		px := r.pixel(vg.Point{X: x(p.X), Y: y(p.Y)})
		if px.In(legend.Inset(-3)) {
			t.Errorf("the point (%g, %g) at pixel %v lies under the legend %v", p.X, p.Y, px, legend)
		}
		if !px.In(data.Inset(-1)) {
			t.Errorf("the point (%g, %g) at pixel %v lies outside the data area %v", p.X, p.Y, px, data)
		}
	}
	for px := bounds.Min.X; px < bounds.Max.X; px++ {
		for _, py := range []int{bounds.Min.Y, bounds.Max.Y - 1} {
			if !isBackground(r.img.At(px, py)) {
				t.Fatalf("pixel (%d, %d) on the image's edge is drawn: something is cut off", px, py)
			}
		}
	}
	for py := bounds.Min.Y; py < bounds.Max.Y; py++ {
		for _, px := range []int{bounds.Min.X, bounds.Max.X - 1} {
			if !isBackground(r.img.At(px, py)) {
				t.Fatalf("pixel (%d, %d) on the image's edge is drawn: something is cut off", px, py)
			}
		}
	}
	dark := 0
	for py := legend.Min.Y; py < legend.Max.Y; py++ {
		for px := legend.Min.X; px < legend.Max.X; px++ {
			if cr, cg, cb, _ := r.img.At(px, py).RGBA(); cr < 0x4000 && cg < 0x4000 && cb < 0x4000 {
				dark++
			}
		}
	}
	if dark < 50 {
		t.Errorf("the legend box %v holds %d dark pixels: its text was not drawn there", legend, dark)
	}
}

// isBackground reports whether c is the canvas's white background.
func isBackground(c color.Color) bool {
	r, g, b, _ := c.RGBA()
	return r > 0xf000 && g > 0xf000 && b > 0xf000
}

// tickLabels returns the labelled ticks of an axis, by value.
func tickLabels(a plot.Axis) map[float64]string {
	out := map[float64]string{}
	for _, tk := range a.Tick.Marker.Ticks(a.Min, a.Max) {
		if tk.Label != "" {
			out[tk.Value] = tk.Label
		}
	}
	return out
}

// The qmax staircase as PNG: the legend beside the data, never on it; ladder ticks at the measured
// concurrencies; the y-axis from 0 to just above the highest value with the SLO marked on it; the title inside
// the image.
func TestStaircaseChartPNG(t *testing.T) {
	for name, c := range map[string]staircaseChart{
		"geometric ladder, bracketed": {Title: "Q_max of kokoro-82m-twin on ml.g5.xlarge (sagemaker-stream, closed loop)", Percentile: 95, SLOMs: 3000, StallBudgetMs: 550,
			QMax: 48, LowestFail: 64, Steps: []chartStep{{1, 410, 0, true}, {2, 420, 0, true}, {4, 450, 2, true}, {8, 500, 5, true}, {16, 640, 9, true},
				{32, 1400, 40, true}, {48, 2600, 120, true}, {64, 5200, 900, false}, {56, 3900, 600, false}}},
		"short ladder, lower bound": {Title: "Q_max of espeak-ng on local (http, closed loop)", Percentile: 95, SLOMs: 1000, StallBudgetMs: 50,
			QMax: 2, Steps: []chartStep{{1, 40, 0, true}, {2, 52, 0, true}}},
		"a title too long for one line": {Title: "Q_max of " + strings.Repeat("a model with a very long catalog identifier ", 3) + "on ml.g5.12xlarge (sagemaker-stream, closed loop, bisected)", Percentile: 95,
			SLOMs: 300, QMax: 4, LowestFail: 8, Steps: []chartStep{{8, 900, 120, false}, {1, 40, 0, true}, {2, 80, 3, true}, {4, 210, 20, true}}},
		"a title longer than the plot": {Title: "Q_max of a-model-with-a-very-long-catalog-identifier-for-testing on ml.g5.12xlarge (sagemaker-stream, closed loop, bisected)", Percentile: 95,
			SLOMs: 300, QMax: 4, LowestFail: 8, Steps: []chartStep{{8, 900, 120, false}, {1, 40, 0, true}, {2, 80, 3, true}, {4, 210, 20, true}}},
	} {
		t.Run(name, func(t *testing.T) {
			f, err := staircaseFrame(c)
			if err != nil {
				t.Fatal(err)
			}
			r := renderPNG(t, f)
			var points []plotter.XY
			top, ladder := math.Max(c.SLOMs, c.StallBudgetMs), map[float64]bool{}
			for _, s := range c.Steps {
				points = append(points, plotter.XY{X: float64(s.Concurrency), Y: s.TTFABMs}, plotter.XY{X: float64(s.Concurrency), Y: s.StallMs})
				top = math.Max(top, math.Max(s.TTFABMs, s.StallMs))
				ladder[float64(s.Concurrency)] = true
			}
			checkLayout(t, r, points)
			if lines := strings.Count(f.Plot.Title.Text, "\n") + 1; (name == "a title too long for one line") != (lines > 1) {
				t.Errorf("the title is drawn on %d line(s): %q", lines, f.Plot.Title.Text)
			}

			p := f.Plot
			if p.Y.Min != 0 || p.Y.Max < top || p.Y.Max > top*1.1 {
				t.Errorf("y-axis [%g, %g], want [0, just above %g]", p.Y.Min, p.Y.Max, top)
			}
			if got := tickLabels(p.Y)[c.SLOMs]; got != "SLO "+FormatFloat(c.SLOMs) {
				t.Errorf("y-axis label at the SLO %g = %q, want it marked", c.SLOMs, got)
			}
			ticks := p.X.Tick.Marker.Ticks(p.X.Min, p.X.Max)
			got := map[float64]bool{}
			for _, tk := range ticks {
				got[tk.Value] = true
			}
			if len(got) != len(ladder) || len(ticks) != len(ladder) {
				t.Errorf("x-axis ticks %v, want one at each measured concurrency %v", ticks, ladder)
			}
			for v := range ladder {
				if !got[v] {
					t.Errorf("no x-axis tick at the measured concurrency %g", v)
				}
			}
			if labels := tickLabels(p.X); labels[float64(c.Steps[0].Concurrency)] == "" && labels[1] == "" {
				t.Errorf("the x-axis labels %v name no step", labels)
			}
		})
	}
}

// The rate staircase as PNG: the legend beside the data, the title inside the image.
func TestRateChartPNG(t *testing.T) {
	q := &capacity.QMax{Model: "kokoro-82m-twin", InstanceType: "ml.g5.xlarge", Transport: "sagemaker-stream", HighestThroughputRPS: 17.9}
	for i, frac := range []float64{0.3, 0.5, 0.7, 0.85, 0.95, 1.05} {
		rps := frac * q.HighestThroughputRPS
		q.RateSteps = append(q.RateSteps, capacity.RateStep{OfferedRPS: rps, InFlightMean: rps * 0.4 * float64(i+1), InFlightMax10s: rps * 0.6 * float64(i+1),
			CloudWatchMax10s: rps * 0.55 * float64(i+1), MeetsSLO: frac < 1})
	}
	f, err := rateFrame(q)
	if err != nil {
		t.Fatal(err)
	}
	r := renderPNG(t, f)
	var points []plotter.XY
	for _, s := range q.RateSteps {
		points = append(points, plotter.XY{X: s.OfferedRPS, Y: s.InFlightMean}, plotter.XY{X: s.OfferedRPS, Y: s.InFlightMax10s}, plotter.XY{X: s.OfferedRPS, Y: s.CloudWatchMax10s})
	}
	checkLayout(t, r, points)
}

// The T_total waterfall as PNG: every stage named on the y-axis (a zero-length one too, saying so), the
// dominant stage named in the legend, the legend beside the bars, nothing cut off.
func TestWaterfallChartPNG(t *testing.T) {
	u := 2.0
	tt := &capacity.TTotal{Model: "kokoro-82m", InstanceType: "ml.g5.xlarge", FromInstances: 1, ToInstances: 2, ClockStart: capacity.StageDesiredSet,
		TTotalS: 260.2, TTotalUncertaintyS: &u, DominantStage: capacity.StageContainerStarted,
		Durations: []capacity.StageDuration{
			{From: capacity.StageDesiredSet, To: capacity.StageContainerStarted, DurationS: 142.6},
			{From: capacity.StageContainerStarted, To: "weights_downloaded", DurationS: 58.3},
			{From: "weights_downloaded", To: "model_loaded", DurationS: 21.4},
			{From: "model_loaded", To: "ping_healthy", DurationS: 6.1},
			{From: "ping_healthy", To: "in_service", DurationS: 28.3},
			{From: "in_service", To: "first_served_by_new_instance", DurationS: 0},
			{From: "first_served_by_new_instance", To: "traffic_recovered", DurationS: 3.5},
		}}
	f, err := waterfallFrame(tt)
	if err != nil {
		t.Fatal(err)
	}
	r := renderPNG(t, f)
	var points []plotter.XY
	n := len(tt.Durations)
	at := 0.0
	for i, d := range tt.Durations {
		points = append(points, plotter.XY{X: at, Y: float64(n - 1 - i)}, plotter.XY{X: at + d.DurationS, Y: float64(n - 1 - i)})
		at += d.DurationS
	}
	checkLayout(t, r, points)
	labels := strings.Join(slices.Collect(maps.Values(tickLabels(f.Plot.Y))), "|")
	for _, want := range []string{"container_started 142.6 s", "first_served_by_new_instance 0 s (with the previous)", "traffic_recovered 3.5 s"} {
		if !strings.Contains(labels, want) {
			t.Errorf("the y-axis does not name %q: %q", want, labels)
		}
	}
	legend := strings.Join(f.entries, "|")
	for _, want := range []string{"dominant stage: container_started 142.6 s", "zero-length stage", "container (from container_started)"} {
		if !strings.Contains(legend, want) {
			t.Errorf("the legend does not say %q: %q", want, legend)
		}
	}
}
