package main

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the view's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestLiveStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &live{now: func() time.Time { return now }}
	l.startStep(2, 5, 10*time.Second)
	if got := l.status(); got != "elapsed 0s, remaining 10s, p95 TTFAB -, stall -, 0 ok, 0 failed" {
		t.Errorf("status before any request: %q", got)
	}
	for i := 1; i <= 100; i++ {
		l.observe(float64(i), float64(i)/10, true)
	}
	l.observe(1e9, 1e9, false) // a failure is counted, never a latency
	now = now.Add(4 * time.Second)
	if got, want := l.status(), "elapsed 4s, remaining 6s, p95 TTFAB 95 ms, stall 10 ms (last 100), 1 ok, 1 failed"; got != strings.Replace(want, "1 ok", "100 ok", 1) {
		t.Errorf("status = %q", got)
	}
	// The window keeps the last liveWindow requests only: a step that degrades shows it.
	for i := 0; i < liveWindow; i++ {
		l.observe(5000, 0, true)
	}
	if got := nearestRank(l.ttfab, 95); got != 5000 {
		t.Errorf("live p95 after %d slow requests = %g, want 5000", liveWindow, got)
	}
	now = now.Add(time.Minute)
	if got := l.status(); !strings.HasPrefix(got, "elapsed 1m4s, remaining 0s,") {
		t.Errorf("an overrun step shows %q, want remaining 0s", got)
	}
	l.startStep(3, 10, time.Second)
	if got := l.status(); !strings.Contains(got, "p95 TTFAB -") || !strings.Contains(got, "0 ok, 0 failed") {
		t.Errorf("a new step starts with the previous step's requests: %q", got)
	}
}

func TestNearestRank(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		p    int
		want float64
	}{{[]float64{3}, 95, 3}, {[]float64{1, 2}, 50, 1}, {[]float64{1, 2}, 95, 2}, {[]float64{5, 1, 4, 2, 3}, 95, 5}, {[]float64{5, 1, 4, 2, 3}, 50, 3}} {
		if got := nearestRank(tt.xs, tt.p); got != tt.want {
			t.Errorf("nearestRank(%v, %d) = %g, want %g", tt.xs, tt.p, got, tt.want)
		}
	}
}

func TestLineView(t *testing.T) {
	var out syncBuffer
	v := newLineView(&out, 20*time.Millisecond)
	v.StartStep(1, 4, time.Second)
	v.Observe(120, 0, true)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "p95 TTFAB 120 ms") {
		if time.Now().After(deadline) {
			t.Fatalf("no periodic line within 5s: %q", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	v.EndStep("passed: p95 TTFAB 120 ms ≤ 300 ms")
	v.Close()
	got := out.String()
	for _, want := range []string{"step 1: concurrency 4 (closed loop), about 1s\n", "step 1: concurrency 4: passed: p95 TTFAB 120 ms ≤ 300 ms\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("plain output lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "\x1b[") {
		t.Errorf("plain output has terminal escapes: %q", got)
	}
}

func TestBarView(t *testing.T) {
	var out syncBuffer
	v := newBarView(&out, true)
	v.StartStep(3, 10, 300*time.Millisecond)
	v.Observe(250, 12, true)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "p95 TTFAB 250ms stall 12ms 1/0") {
		if time.Now().After(deadline) {
			t.Fatalf("the bar never showed the live p95 within 5s: %q", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	v.EndStep("failed: p95 TTFAB 250 ms > 200 ms")
	v.Close()
	got := out.String()
	for _, want := range []string{"step 3 C=10", "step 3: concurrency 10: failed: p95 TTFAB 250 ms > 200 ms"} {
		if !strings.Contains(got, want) {
			t.Errorf("the live view lacks %q:\n%s", want, got)
		}
	}
}

func TestNewStepViewPlainWhenNotATerminal(t *testing.T) {
	var out bytes.Buffer
	if _, ok := newStepView(&out).(*lineView); !ok {
		t.Error("a buffer got the terminal view; want plain lines")
	}
}
