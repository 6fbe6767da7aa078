package simulate

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// checkCountingContext counts the checks of a run (calls to Err) and is done from the stopAt-th on.
type checkCountingContext struct {
	context.Context
	checks, stopAt int
}

func (c *checkCountingContext) Err() error {
	c.checks++
	if c.checks >= c.stopAt {
		return context.Canceled
	}
	return nil
}

func dayFleet(t *testing.T) (Trace, Fleet) {
	t.Helper()
	tr, err := Generate(ShapeParams{Shape: ShapeDiurnal, PeakRPS: 60, TroughRPS: 5, Duration: 24 * time.Hour, Step: time.Minute, Period: 24 * time.Hour, PeakAt: 14 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	return tr, Fleet{Name: "day", Instance: saturating(), TTotalS: 60, Scaling: scaling(30)}
}

// A run checks its context every simulated minute, so a signal stops even a month-long trace after a
// minute's work; a context that is never done changes nothing in the result.
func TestRunContextChecksEverySimulatedMinute(t *testing.T) {
	tr, f := dayFleet(t)
	never := &checkCountingContext{Context: context.Background(), stopAt: 1 << 30}
	r, err := RunContext(never, tr, f)
	if err != nil {
		t.Fatal(err)
	}
	if want := int(tr.Duration / CheckEvery); never.checks < want {
		t.Errorf("a day's run checked its context %d times, want at least once a simulated minute (%d)", never.checks, want)
	}
	if !reflect.DeepEqual(r, Run(tr, f)) {
		t.Error("RunContext's result differs from Run's")
	}

	stop := &checkCountingContext{Context: context.Background(), stopAt: 10}
	r, err = RunContext(stop, tr, f)
	if !errors.Is(err, context.Canceled) || len(r.Minutes) != 0 {
		t.Fatalf("stopped at the 10th check: err %v, %d minutes returned", err, len(r.Minutes))
	}
	// The run stopped at the check that found its context done (context.Cause may ask Err once more for the
	// error it returns): not a check more, so not a simulated minute more.
	if stop.checks > 10+1 {
		t.Errorf("the run checked its context %d more times after it was done at the 10th check", stop.checks-10)
	}
}

func TestOracleSpreadAndRunStopWithTheirContext(t *testing.T) {
	tr, f := dayFleet(t)
	ctx, cancel := context.WithCancelCause(context.Background())
	cause := errors.New("interrupt signal received")
	cancel(cause)
	if _, err := Oracle(ctx, tr, f.Instance, 10); err != cause {
		t.Errorf("Oracle on a done context: %v, want its cause", err)
	}
	sc := loadmodel.Scatter{Quantile: 0.1, RPS: []float64{1, 10}, Mean: []float64{3.5, 18}}
	if _, err := ScaleOutSpreadContext(ctx, tr, f, sc, 50); err != cause {
		t.Errorf("ScaleOutSpreadContext on a done context: %v, want its cause", err)
	}
	if _, err := RunContext(ctx, tr, f); err != cause {
		t.Errorf("RunContext on a done context: %v, want its cause", err)
	}
}
