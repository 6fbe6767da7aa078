package measure

import (
	"strconv"
	"strings"
	"time"
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

func JoinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}
