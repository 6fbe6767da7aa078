package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

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
