package bench_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
)

// TestNoAnswerDoesNotSpin: a step against a port where nothing listens fails every request, and each worker
// pauses bench.NoAnswerPause after each refusal instead of retrying in a tight loop (before the pause, an 8-s
// step on loopback wrote 153,954 records). The step still fails on its error rate.
func TestNoAnswerDoesNotSpin(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()

	const c, hold = 4, time.Second
	cfg := stepConfig(t, bench.NewHTTP(url), []string{"Hello there"}, 0, hold, hold)
	res, err := bench.RunStep(context.Background(), cfg, c)
	if err != nil {
		t.Fatal(err)
	}
	// Each worker sends at most once per pause, plus its first send.
	limit := c * (int(hold/bench.NoAnswerPause) + 2)
	if total := res.OK + res.Errors + res.Shed; total == 0 || total > limit {
		t.Fatalf("%d requests in a %v step at C=%d against a closed port, want 1 to %d", total, hold, c, limit)
	}
	if res.MeetsSLO || res.Usable {
		t.Fatalf("a step where every request was refused: meets SLO %v, usable %v; want neither", res.MeetsSLO, res.Usable)
	}
}
