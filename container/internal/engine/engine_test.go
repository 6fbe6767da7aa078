package engine

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCalibrationHonoursCancellationDuringCompute(t *testing.T) {
	c := &Calibration{SegmentCompute: time.Hour}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	emitted := false
	err := c.Synthesize(ctx, Segment{Text: "abc", Speed: 1}, func([]int16) error { emitted = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || emitted {
		t.Errorf("err = %v, emitted = %v; want the deadline and no audio", err, emitted)
	}
}

func TestCalibrationChunksAndStopsOnEmitError(t *testing.T) {
	c := &Calibration{}
	var sizes []int
	err := c.Synthesize(context.Background(), Segment{Text: strings.Repeat("x", 40), Speed: 1}, func(s []int16) error {
		sizes = append(sizes, len(s))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, n := range sizes {
		if n > CalibrationSampleRate/10 {
			t.Errorf("chunk of %d samples is over 100 ms", n)
		}
		total += n
	}
	if total != 40*1440 {
		t.Errorf("%d samples, want %d", total, 40*1440)
	}
	stop := errors.New("gone")
	calls := 0
	err = c.Synthesize(context.Background(), Segment{Text: strings.Repeat("x", 40), Speed: 1}, func([]int16) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Errorf("err %v after %d calls", err, calls)
	}
}
