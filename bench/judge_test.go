package bench

import (
	"strings"
	"testing"
	"time"
)

// stepRecords is a closed-loop step at concurrency 4 of n measured requests, one every 50 ms, each 100 ms
// long; class(i) gives request i's class and status.
func stepRecords(n int, class func(i int) (string, int)) []Record {
	ws := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	we := ws.Add(time.Duration(n) * 50 * time.Millisecond)
	var recs []Record
	for i := range n {
		sent := ws.Add(time.Duration(i) * 50 * time.Millisecond)
		c, st := class(i)
		r := Record{Step: 4, Worker: i % 4, Seq: i / 4, Sent: sent, End: sent.Add(100 * time.Millisecond), WindowStart: ws, WindowEnd: we,
			Measured: true, Class: c, Status: st, ResponseMs: 100}
		if c == ClassOK {
			r.TTFABMs = 20
		}
		recs = append(recs, r)
	}
	return recs
}

// TestServerErrorsFailTheStep: a step where the server shed 12% of the requests failed; it
// is not "unusable", which is kept for a client that could not hold the concurrency, too few samples or
// requests that got no answer at all. Timeouts and 5xx answers are the server's too.
func TestServerErrorsFailTheStep(t *testing.T) {
	j := Judge{SLO: time.Second, SLOPercentile: 95, StallJitter: DefaultStallJitter, MinRequests: 30, MaxErrorRate: 0.01, MinConcurrencyRatio: 0.1}
	for _, tt := range []struct {
		name   string
		class  func(i int) (string, int)
		reason string
	}{
		{"12% shed", func(i int) (string, int) {
			if i%25 < 3 {
				return ClassShed, 503
			}
			return ClassOK, 200
		}, "shed"},
		{"5% timeouts", func(i int) (string, int) {
			if i%20 == 0 {
				return ClassTimeout, 0
			}
			return ClassOK, 200
		}, "timeouts"},
		{"5% 500s", func(i int) (string, int) {
			if i%20 == 0 {
				return ClassOther, 500
			}
			return ClassOK, 200
		}, "failed"},
		{"all throttled by SageMaker", func(i int) (string, int) { return ClassOther, 400 }, "no request succeeded"},
	} {
		s := SummarizeStep(4, stepRecords(200, tt.class), j)
		if s.MeetsSLO || !s.Usable || !strings.Contains(strings.Join(s.FailReasons, "; "), tt.reason) {
			t.Errorf("%s: meets %v, usable %v (%s), reasons %q: want a usable failure naming %q", tt.name, s.MeetsSLO, s.Usable, s.UnusableReason, s.FailReasons, tt.reason)
		}
	}
	// No answer at all: the connection was lost; the step tells nothing about the instance.
	s := SummarizeStep(4, stepRecords(200, func(i int) (string, int) {
		if i%10 == 0 {
			return ClassOther, 0
		}
		return ClassOK, 200
	}), j)
	if s.MeetsSLO || s.Usable || s.NoAnswer != 20 || !strings.Contains(s.UnusableReason, "no answer") {
		t.Errorf("10%% no answer: meets %v, usable %v (%s), no answer %d: want an unusable failure", s.MeetsSLO, s.Usable, s.UnusableReason, s.NoAnswer)
	}
	// Too few samples stays unusable.
	s = SummarizeStep(4, stepRecords(20, func(int) (string, int) { return ClassOK, 200 }), j)
	if !s.MeetsSLO || s.Usable || !strings.Contains(s.UnusableReason, "too few requests") {
		t.Errorf("20 requests: meets %v, usable %v (%s): want a pass that is too small to use", s.MeetsSLO, s.Usable, s.UnusableReason)
	}
}
