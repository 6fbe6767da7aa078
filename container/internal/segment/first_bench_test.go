package segment_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/espeak"
	"github.com/speech-infra/speech-infra/container/internal/segment"
)

// BenchmarkFirstSegmentEspeak measures what ShortenFirst changes for espeak-ng (in process): the time to a
// request's first audio sample and to the end of its first segment, with the first sentence whole and cut
// near FirstTargetRunes, over the first sentences of bench/sentences.txt (the load engine's corpus). Run
// with `go test -run - -bench FirstSegment ./internal/segment`; the README's "Scheduling" section quotes it.
func BenchmarkFirstSegmentEspeak(b *testing.B) {
	raw, err := os.ReadFile("../../../bench/sentences.txt")
	if err != nil {
		b.Fatal(err)
	}
	var firsts []string
	for _, l := range strings.Split(string(raw), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			firsts = append(firsts, segment.Split(l)[0])
		}
	}
	for _, v := range []struct {
		name  string
		first func(string) string
	}{
		{"whole", func(s string) string { return s }},
		{"shortened", func(s string) string { return segment.ShortenFirst([]string{s}, segment.FirstTargetRunes)[0] }},
	} {
		b.Run(v.name, func(b *testing.B) {
			var toFirst, toEnd time.Duration
			var runes int
			for i := 0; b.Loop(); i++ {
				text := v.first(firsts[i%len(firsts)])
				runes += len([]rune(text))
				t0 := time.Now()
				var first time.Duration
				err := espeak.Synthesize(text, espeak.DefaultVoice, espeak.DefaultRate, func(s []int16) error {
					if first == 0 && len(s) > 0 {
						first = time.Since(t0)
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
				toFirst += first
				toEnd += time.Since(t0)
			}
			n := float64(b.N)
			b.ReportMetric(float64(toFirst.Microseconds())/n/1000, "ms-to-first-sample")
			b.ReportMetric(float64(toEnd.Microseconds())/n/1000, "ms-first-segment")
			b.ReportMetric(float64(runes)/n, "runes")
		})
	}
}
