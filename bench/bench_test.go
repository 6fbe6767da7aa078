package bench

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// BenchmarkEngineRequest measures the engine's own cost per request: one worker in a closed loop against an
// httptest server answering a tiny WAV (44-byte header and 100 samples), through the http transport, the
// stream reader, the record and its JSON line. ns/op is per request (the server's share included, which is
// small); compare runs on the same machine.
func BenchmarkEngineRequest(b *testing.B) {
	body := append(wavHeader(24000), make([]byte, 200)...)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Write(body)
	}))
	defer srv.Close()
	tr := NewHTTP(srv.URL)
	s, _ := tr.Worker(0)
	cfg := shortConfig(tr)
	w := NewRecordWriter(io.Discard)
	now := time.Now()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		res, err := s.Send(ctx, "Hello there.")
		r := record(ctx, cfg, 1, 0, i, "Hello there.", res, err, now, now.Add(time.Hour), now, now.Add(time.Hour))
		if r.Class != ClassOK {
			b.Fatal(r.Error)
		}
		if err := w.Write(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSummarize measures folding a step's records (10,000 requests at concurrency 50) into its result.
func BenchmarkSummarize(b *testing.B) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]Record, 10_000)
	for i := range recs {
		sent := t0.Add(time.Duration(i) * 10 * time.Millisecond)
		recs[i] = Record{Step: 50, Worker: i % 50, Seq: i / 50, Sent: sent, End: sent.Add(500 * time.Millisecond),
			WindowStart: t0, WindowEnd: t0.Add(100 * time.Second), Measured: true, Class: ClassOK,
			TTFABMs: float64(i % 997), StallMs: float64(i % 13), ResponseMs: 500}
	}
	j := shortConfig(nil).Judge()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		SummarizeStep(50, recs, j)
	}
}
