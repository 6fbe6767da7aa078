// Package benchkit is how the benchmark programs under perf measure a path and draw it: closed-loop steps of the
// load engine (Step) through a transport that keeps each request's times (Timed), exact percentiles and gonum
// line charts. What they run and stop is in package harness.
package benchkit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"sort"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
)

// Percentile returns the exact p-th percentile (nearest rank, bench.Percentile) of values (not changed); NaN
// when empty.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	return bench.Percentile(s, p)
}

// Series is one line of a chart.
type Series struct {
	Name string
	XY   plotter.XYs
}

// Chart is a line chart of one or more series.
type Chart struct {
	Title, X, Y string
	// LogX draws the X axis logarithmically (concurrency 1 ... 1000).
	LogX   bool
	Series []Series
	// HLine, when not NaN, is a horizontal goal line named HLineName.
	HLine     float64
	HLineName string
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// WriteSVG draws c and writes it to path atomically.
func (c Chart) WriteSVG(path string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.X
	p.Y.Label.Text = c.Y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	minX, maxX := math.Inf(1), math.Inf(-1)
	for i, s := range c.Series {
		if len(s.XY) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.XY)
		if err != nil {
			return fmt.Errorf("draw %s: series %s: %w", path, s.Name, err)
		}
		col := palette[i%len(palette)]
		l.Color, pts.Color = col, col
		pts.Shape = draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
		for _, xy := range s.XY {
			minX, maxX = math.Min(minX, xy.X), math.Max(maxX, xy.X)
		}
	}
	if !math.IsNaN(c.HLine) && !math.IsInf(minX, 0) {
		g, err := plotter.NewLine(plotter.XYs{{X: minX, Y: c.HLine}, {X: maxX, Y: c.HLine}})
		if err == nil {
			g.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
			g.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(g)
			p.Legend.Add(c.HLineName, g)
		}
	}
	wt, err := p.WriterTo(20*vg.Centimeter, 12*vg.Centimeter, "svg")
	if err != nil {
		return fmt.Errorf("draw %s: %w", path, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("draw %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	return nil
}

// ErrInterrupted is returned when a run is interrupted.
var ErrInterrupted = errors.New("interrupted")

// Timed wraps a transport and keeps each successful request's TTFAB and full-response time (ms), per worker
// so the request path takes no lock. Build it with NewTimed for the step's concurrency.
type Timed struct {
	Inner       bench.Transport
	ttfab, resp [][]float64
	errs        []int
}

// NewTimed returns a Timed for up to c workers.
func NewTimed(inner bench.Transport, c int) *Timed {
	return &Timed{Inner: inner, ttfab: make([][]float64, c), resp: make([][]float64, c), errs: make([]int, c)}
}

// Name is the inner transport's name.
func (t *Timed) Name() string { return t.Inner.Name() }

// Worker wraps the inner transport's worker i.
func (t *Timed) Worker(i int) (bench.Sender, error) {
	if i >= len(t.errs) {
		return nil, fmt.Errorf("timed transport: worker %d of %d: build it with NewTimed for the step's concurrency", i, len(t.errs))
	}
	s, err := t.Inner.Worker(i)
	if err != nil {
		return nil, err
	}
	return &timedSender{inner: s, t: t, i: i}, nil
}

type timedSender struct {
	inner bench.Sender
	t     *Timed
	i     int
}

func (s *timedSender) Send(ctx context.Context, text string) (bench.StreamResult, error) {
	res, err := s.inner.Send(ctx, text)
	if err != nil {
		s.t.errs[s.i]++
		return res, err
	}
	s.t.resp[s.i] = append(s.t.resp[s.i], float64(res.End.Sub(res.Sent))/float64(time.Millisecond))
	s.t.ttfab[s.i] = append(s.t.ttfab[s.i], float64(res.TTFAB())/float64(time.Millisecond))
	return res, err
}

// Results returns the TTFABs, the full-response times and the failed count (read after the step).
func (t *Timed) Results() (ttfab, resp []float64, failed int) {
	for i := range t.errs {
		ttfab = append(ttfab, t.ttfab[i]...)
		resp = append(resp, t.resp[i]...)
		failed += t.errs[i]
	}
	return ttfab, resp, failed
}

// Step runs one closed-loop step of the load engine at concurrency c for d (no settle; all of it measured)
// through tr with a corpus of the one text, and returns its result.
func Step(ctx context.Context, tr bench.Transport, c int, d time.Duration, text string) (bench.StepResult, error) {
	corpus, err := bench.NewCorpus("benchkit", []string{text})
	if err != nil {
		return bench.StepResult{}, err
	}
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure = 0, d, d
	cfg.RequestTimeout, cfg.Grace = 10*time.Second, 10*time.Second
	cfg.SLO, cfg.MinRequests = time.Second, 1
	cfg.Transport, cfg.Corpus, cfg.RunID = tr, corpus, "benchkit"
	return bench.RunStep(ctx, cfg, c)
}

// Path is one way to a server that Interleave measures, by level (the index of its concurrencies).
type Path struct {
	Name      string
	Transport bench.Transport
	// TTFAB and Resp are the successful requests' TTFABs and full-response times (ms); Rates each round's
	// achieved rate (requests/s).
	TTFAB, Resp, Rates [][]float64
}

// Interleave warms each path up (a step of 300 ms at the highest concurrency, not measured), then drives the
// paths closed loop at each of concurrencies in rounds steps of d/rounds each, 200 ms apart, the order of the
// paths turning from round to round and level to level, so that no path always goes first; each step is said
// on progress. A step with a failed request, or with none completed, ends the run with an error; explain, when
// not nil, adds what explains a failed request. Each path's figures are kept in it.
func Interleave(ctx context.Context, paths []*Path, concurrencies []int, rounds int, d time.Duration, text string, progress io.Writer, explain func() string) error {
	maxC := concurrencies[len(concurrencies)-1]
	for _, p := range paths {
		p.TTFAB, p.Resp, p.Rates = make([][]float64, len(concurrencies)), make([][]float64, len(concurrencies)), make([][]float64, len(concurrencies))
		if _, err := Step(ctx, NewTimed(p.Transport, maxC), maxC, 300*time.Millisecond, text); err != nil {
			return fmt.Errorf("warm-up %s: %w", p.Name, err)
		}
	}
	slice := d / time.Duration(rounds)
	for li, c := range concurrencies {
		for round := 0; round < rounds; round++ {
			for k := range paths {
				p := paths[(round+k+li)%len(paths)]
				fmt.Fprintf(progress, "C=%d round %d/%d: %s for %v\n", c, round+1, rounds, p.Name, slice)
				tr := NewTimed(p.Transport, c)
				res, err := Step(ctx, tr, c, slice, text)
				if err != nil {
					return fmt.Errorf("%s at C=%d: %w", p.Name, c, err)
				}
				tt, rr, failed := tr.Results()
				if failed > 0 {
					more := ""
					if explain != nil {
						more = "\n" + explain()
					}
					return fmt.Errorf("%s at C=%d: %d requests failed: a benchmark of failing requests measures nothing%s", p.Name, c, failed, more)
				}
				if len(tt) == 0 {
					return fmt.Errorf("%s at C=%d: no request completed in %v", p.Name, c, slice)
				}
				p.TTFAB[li], p.Resp[li] = append(p.TTFAB[li], tt...), append(p.Resp[li], rr...)
				p.Rates[li] = append(p.Rates[li], res.AchievedRPS)
				time.Sleep(200 * time.Millisecond)
			}
		}
	}
	if ctx.Err() != nil {
		return ErrInterrupted
	}
	return nil
}

// FirstAnswers sends text once through each path, each within timeout, and returns the answers in the paths'
// order, for a program to check that every path reaches the same server before it measures them.
func FirstAnswers(ctx context.Context, paths []*Path, text string, timeout time.Duration) ([]bench.StreamResult, error) {
	var got []bench.StreamResult
	for _, p := range paths {
		s, err := p.Transport.Worker(0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		call, cancel := context.WithTimeout(ctx, timeout)
		res, err := s.Send(call, text)
		cancel()
		if err != nil {
			return nil, fmt.Errorf("first request %s: %w", p.Name, err)
		}
		got = append(got, res)
	}
	return got, nil
}
