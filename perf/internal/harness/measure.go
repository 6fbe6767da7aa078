// How the benchmark programs measure a path and draw it: closed-loop steps of the
// load engine (Step) through a transport that keeps each request's times (Timed), exact percentiles and gonum
// line charts.
package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"time"

	"github.com/speech-infra/speech-infra/bench"
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
	corpus, err := bench.NewCorpus("harness", []string{text})
	if err != nil {
		return bench.StepResult{}, err
	}
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure = 0, d, d
	cfg.RequestTimeout, cfg.Grace = 10*time.Second, 10*time.Second
	cfg.SLO, cfg.MinRequests = time.Second, 1
	cfg.Transport, cfg.Corpus, cfg.RunID = tr, corpus, "harness"
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
