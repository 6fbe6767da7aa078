package traffic

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// A fetched history of standard-resolution data encodes as a rate trace that reads back with its requests,
// and its summary says what it holds.
func TestFetchEncodeAndSummary(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 30, 0, time.UTC)
	read := func(_ context.Context, start, end time.Time, period time.Duration) ([]Datapoint, error) {
		var out []Datapoint
		for at := start.Truncate(time.Minute); at.Before(end); at = at.Add(time.Minute) {
			if !at.Before(start) {
				out = append(out, Datapoint{Time: at, Value: 60})
			}
		}
		return out, nil
	}
	h, err := Fetch(context.Background(), read, now, 10*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if !h.HighResFrom.IsZero() || h.Requests != 660 {
		t.Fatalf("history from %v, %v requests: want 1-minute periods throughout and 660 requests", h.HighResFrom, h.Requests)
	}
	data, err := h.Encode("history.csv", "test metric")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(data, []byte("# test metric\n")) {
		t.Errorf("the trace does not start with what it is:\n%s", data)
	}
	tr, err := simulate.ParseCSV("history.csv", bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if got := tr.Requests(0, tr.Duration); got < 659 || got > 661 {
		t.Errorf("the trace reads back with %v requests, want 660", got)
	}
	sum := h.Summary("ep", "AllTraffic", "the local emulator", "history.csv")
	if sum.Periods != len(h.Periods) || sum.Requests != 660 || sum.HighResFrom != "" || sum.Output != "history.csv" || sum.Resolution != h.Resolution() {
		t.Errorf("summary %+v does not say what the history holds", sum)
	}
}

// --since takes days as well as what time.ParseDuration reads.
func TestParseSince(t *testing.T) {
	for in, want := range map[string]time.Duration{"14d": 14 * 24 * time.Hour, "1.5d": 36 * time.Hour, "90m": 90 * time.Minute, "36h": 36 * time.Hour} {
		if got, err := ParseSince(in); err != nil || got != want {
			t.Errorf("ParseSince(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "-1d", "1e9d", "NaNd", "two weeks"} {
		if _, err := ParseSince(in); err == nil {
			t.Errorf("ParseSince(%q): no error", in)
		}
	}
}

// The text of a description names the trace, its peaks and its profiles.
func TestDescriptionWriteText(t *testing.T) {
	s, err := Read("day.csv", strings.NewReader("timestamp,rps\n0,10\n60,20\n120,5\n"))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Describe(s, 80*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := d.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"trace", "rate trace, step 1m0s", "mean rate", "peak at 1 min", "daily profile: too short", "weekly profile: too short"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("the description lacks %q:\n%s", want, b.String())
		}
	}
}
