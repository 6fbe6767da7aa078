package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/audio"
	"github.com/speech-infra/speech-infra/container/internal/engine"
)

// BenchmarkGate measures one admission and release under parallel contention.
func BenchmarkGate(b *testing.B) {
	for _, depth := range []int{0, 64} {
		b.Run(fmt.Sprintf("max=%d", depth), func(b *testing.B) {
			g := NewGate(depth)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, ok := g.Acquire(); ok {
						g.Release()
					}
				}
			})
		})
	}
}

// BenchmarkStream measures the server's own overhead per request (decode,
// gate, scheduler, streaming WAV over real HTTP) with the calibration engine
// at zero compute, so the engine contributes nothing but the samples.
func BenchmarkStream(b *testing.B) {
	for _, policy := range []string{FirstChunk, FIFO} {
		for _, segs := range []int{1, 4} {
			b.Run(fmt.Sprintf("%s/segments=%d", policy, segs), func(b *testing.B) {
				opts := defaultOptions()
				opts.Scheduler, opts.Workers = policy, 2
				_, ts, _ := startServer(b, opts, &engine.Calibration{})
				text := strings.TrimSpace(strings.Repeat("Short clause. ", segs))
				body := fmt.Sprintf(`{"text":%q}`, text)
				client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, ts.URL+"/invocations", strings.NewReader(body))
						res, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						n, _ := io.Copy(io.Discard, res.Body)
						res.Body.Close()
						if res.StatusCode != 200 || n == 0 {
							b.Errorf("status %d, %d bytes", res.StatusCode, n)
							return
						}
						b.SetBytes(n)
					}
				})
			})
		}
	}
}

// BenchmarkTTFAB compares the schedulers the way qmax sees them: a closed
// loop of 8 clients, each sending its next 4-segment request when the last
// one ends, against one synthesis slot at 5 ms per segment. It reports the
// p95 time to first audio byte.
func BenchmarkTTFAB(b *testing.B) {
	for _, policy := range []string{FIFO, FirstChunk} {
		b.Run(policy, func(b *testing.B) {
			opts := defaultOptions()
			opts.Scheduler = policy
			_, ts, _ := startServer(b, opts, &engine.Calibration{SegmentCompute: 5 * time.Millisecond})
			body := `{"text":"One clause, two clause, three clause, four."}`
			client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
			const clients = 8
			var mu sync.Mutex
			var ttfab []time.Duration
			b.ResetTimer()
			for range b.N {
				var wg sync.WaitGroup
				for range clients {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range 5 {
							start := time.Now()
							res, err := client.Post(ts.URL+"/invocations", "application/json", strings.NewReader(body))
							if err != nil {
								b.Error(err)
								return
							}
							buf := make([]byte, audio.WAVHeaderSize+1)
							_, err = io.ReadFull(res.Body, buf)
							d := time.Since(start)
							io.Copy(io.Discard, res.Body)
							res.Body.Close()
							if err != nil {
								b.Error(err)
								return
							}
							mu.Lock()
							ttfab = append(ttfab, d)
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
			}
			slices.Sort(ttfab)
			b.ReportMetric(float64(ttfab[len(ttfab)*95/100].Microseconds())/1000, "p95-ttfab-ms")
			b.ReportMetric(float64(ttfab[len(ttfab)/2].Microseconds())/1000, "p50-ttfab-ms")
		})
	}
}
