package measure

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
)

// DefaultLadder is the staircase of the original proof of value (docs/design.md, "The original"): the
// concurrencies qmax measures first.
var DefaultLadder = []int{1, 5, 10, 20, 30, 40, 50, 60}

// Staircase defaults: the original proof of value's practice (settle 30 s, hold 240 s, judged on the last 60 s).
const (
	// DefaultLadderExtension is how far each extra step goes beyond the last one while every step passes.
	DefaultLadderExtension = 10
	// DefaultMaxConcurrency bounds the extension of the ladder.
	DefaultMaxConcurrency = 200
	// DefaultHold is how long a step holds its concurrency after settling.
	DefaultHold = 240 * time.Second
	// DefaultMeasureWindow is the end of the hold the step is judged on.
	DefaultMeasureWindow = 60 * time.Second
	// DefaultSettle is how long a step runs before its hold starts, discarded.
	DefaultSettle = 30 * time.Second
)

// JoinInts joins concurrencies with commas, as --ladder takes them.
func JoinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// RateFractionsFlag is the name of qmax's flag of the rate staircase's fractions, which its messages name.
const RateFractionsFlag = "rate-fractions"

// ParseLadder reads "1,5,10": distinct positive concurrencies in increasing order.
func ParseLadder(s string) ([]int, error) {
	var steps []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		n, err := strconv.Atoi(part)
		if err != nil || n < 1 || n > capacity.MaxConcurrency {
			return nil, fmt.Errorf("%q is not a concurrency: want whole numbers from 1 to %d separated by commas, e.g. --ladder 1,2,4,8", part, capacity.MaxConcurrency)
		}
		if len(steps) > 0 && n <= steps[len(steps)-1] {
			return nil, fmt.Errorf("%d follows %d: list each concurrency once, in increasing order, e.g. --ladder 1,2,4,8", n, steps[len(steps)-1])
		}
		steps = append(steps, n)
	}
	return steps, nil
}

// ParseRateFractions reads "0.3,0.5,1.1": increasing fractions in (0, 10]; "none" or "" is no rate staircase.
func ParseRateFractions(s string) ([]float64, error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "none") {
		return nil, nil
	}
	var fs []float64
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		f, err := strconv.ParseFloat(part, 64)
		if err != nil || !(f > 0 && f <= 10) {
			return nil, fmt.Errorf("%q is not a fraction: want numbers in (0, 10] separated by commas, e.g. --%s 0.3,0.5,0.7,1.0, or none", part, RateFractionsFlag)
		}
		if len(fs) > 0 && f <= fs[len(fs)-1] {
			return nil, fmt.Errorf("%g follows %g: list each fraction once, in increasing order", f, fs[len(fs)-1])
		}
		fs = append(fs, f)
	}
	if len(fs) > capacity.MaxRateSteps {
		return nil, fmt.Errorf("%d fractions: at most %d", len(fs), capacity.MaxRateSteps)
	}
	return fs, nil
}

// JoinFloats joins numbers with commas in their shortest exact form, as --rate-fractions takes them.
func JoinFloats(xs []float64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.FormatFloat(x, 'g', -1, 64)
	}
	return strings.Join(s, ",")
}
