package harness

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/perf/internal/row"
)

// Common are the flags the benchmark programs share, parsed by one set of rules: where the row goes (-out),
// the smallest size that only checks the program (-smoke), and, for the programs that drive load for a while,
// how long (-duration) and the calibration engine's wait per segment (-segment-ms).
type Common struct {
	Out      string
	Smoke    bool
	Duration time.Duration
	// SegmentMs is the calibration engine's wait per segment (CALIBRATION_SEGMENT_MS), with -segment-ms.
	SegmentMs int

	durationFlag, segmentFlag bool
	smokeDuration             time.Duration
}

// Durations bounds -duration: long enough for a round to have requests, short enough that a typo is not an
// afternoon.
const (
	MinDuration = 500 * time.Millisecond
	MaxDuration = 10 * time.Minute
)

// AddCommon registers -out and -smoke on fs (smokeUsage says what -smoke shrinks the program to).
func (c *Common) AddCommon(fs *flag.FlagSet, smokeUsage string) {
	fs.StringVar(&c.Out, "out", row.DefaultDir, "directory of the row file and its charts")
	fs.BoolVar(&c.Smoke, "smoke", false, smokeUsage)
}

// AddDuration registers -duration with its default and usage; -smoke sets it to smokeDuration.
func (c *Common) AddDuration(fs *flag.FlagSet, def, smokeDuration time.Duration, usage string) {
	fs.DurationVar(&c.Duration, "duration", def, usage)
	c.durationFlag, c.smokeDuration = true, smokeDuration
}

// AddSegmentMs registers -segment-ms (default 20 ms).
func (c *Common) AddSegmentMs(fs *flag.FlagSet) {
	fs.IntVar(&c.SegmentMs, "segment-ms", 20, "the calibration engine's wait per segment (CALIBRATION_SEGMENT_MS)")
	c.segmentFlag = true
}

// Check applies -smoke and returns every problem of the shared flags, each naming its flag and the fix; the
// program adds its own and reports them together as a usage error.
func (c *Common) Check() []error {
	var errs []error
	if c.durationFlag {
		if c.Smoke {
			c.Duration = c.smokeDuration
		}
		if c.Duration < MinDuration || c.Duration > MaxDuration {
			errs = append(errs, fmt.Errorf("-duration: is %v: want %v to %v", c.Duration, MinDuration, MaxDuration))
		}
	}
	if c.segmentFlag && (c.SegmentMs < 0 || c.SegmentMs > 1000) {
		errs = append(errs, fmt.Errorf("-segment-ms: is %d: want 0 to 1000 (a fixed wait small enough that the path shows)", c.SegmentMs))
	}
	if strings.TrimSpace(c.Out) == "" {
		errs = append(errs, errors.New("-out: is empty: give the directory of the row file, e.g. .cache/bench"))
	}
	return errs
}

// Rounds is how many interleaved rounds a path benchmark splits -duration into: 3, or 1 with -smoke.
func (c *Common) Rounds() int {
	if c.Smoke {
		return 1
	}
	return 3
}

// WriteRow writes the row into dir (row.Write) and prints the file's path on w, the one line the program's
// stdout holds.
func WriteRow(w io.Writer, dir string, r row.Row) error {
	p, err := row.Write(dir, r)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, p)
	return err
}
