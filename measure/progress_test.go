package measure

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/measure/measuretest"
)

func TestLiveStatus(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := &live{now: func() time.Time { return now }}
	l.startStep(2, 5, 10*time.Second)
	if got := l.status(); got != "elapsed 0s, remaining 10s, -, p95 TTFAB -, stall -, 0 ok, 0 failed" {
		t.Errorf("status before any request: %q", got)
	}
	l.update(stepStatus{Phase: "measure", Completed: 101, Failed: 1, TTFABP95Ms: 95.4, StallP95Ms: 10})
	now = now.Add(4 * time.Second)
	if got, want := l.status(), "elapsed 4s, remaining 6s, measure, p95 TTFAB 95 ms, stall 10 ms, 100 ok, 1 failed"; got != want {
		t.Errorf("status = %q, want %q", got, want)
	}
	if got, want := l.compact(), "4s +6s measure p95 TTFAB 95ms stall 10ms 100/1"; got != want {
		t.Errorf("compact = %q, want %q", got, want)
	}
	now = now.Add(time.Minute)
	if got := l.status(); !strings.HasPrefix(got, "elapsed 1m4s, remaining 0s,") {
		t.Errorf("an overrun step shows %q, want remaining 0s", got)
	}
	l.startStep(3, 10, time.Second)
	if got := l.status(); !strings.Contains(got, "p95 TTFAB -") || !strings.Contains(got, "0 ok, 0 failed") {
		t.Errorf("a new step starts with the previous step's numbers: %q", got)
	}
	// Only failures so far: no latency is shown.
	l.update(stepStatus{Phase: "settle", Completed: 3, Failed: 3, TTFABP95Ms: 0})
	if got := l.status(); !strings.Contains(got, "p95 TTFAB -") || !strings.Contains(got, "0 ok, 3 failed") {
		t.Errorf("failures only: %q", got)
	}
}

// viewHangBound bounds the wait for a view's periodic output: it must come (the views redraw every few
// tens of milliseconds), and only a hang takes this long, however loaded the machine.
const viewHangBound = time.Minute

func TestLineView(t *testing.T) {
	var out measuretest.SyncBuffer
	v := newLineView(&out, 20*time.Millisecond)
	v.StartStep(1, 4, time.Second)
	v.Update(stepStatus{Phase: "hold", Completed: 1, TTFABP95Ms: 120})
	deadline := time.Now().Add(viewHangBound)
	for !strings.Contains(out.String(), "p95 TTFAB 120 ms") {
		if time.Now().After(deadline) {
			t.Fatalf("no periodic line within %s: %q", viewHangBound, out.String())
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
	var out measuretest.SyncBuffer
	v := newBarView(&out, true)
	v.StartStep(3, 10, 300*time.Millisecond)
	v.Update(stepStatus{Phase: "measure", Completed: 1, TTFABP95Ms: 250, StallP95Ms: 12})
	deadline := time.Now().Add(viewHangBound)
	for !strings.Contains(out.String(), "measure p95 TTFAB 250ms stall 12ms 1/0") {
		if time.Now().After(deadline) {
			t.Fatalf("the bar never showed the live p95 within %s: %q", viewHangBound, out.String())
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
