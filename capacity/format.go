package capacity

import (
	"math"
	"strconv"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// FormatNumber formats a derived number for humans, as the plan's findings print it and as tts-bench plan's
// table prints the plan, so that a number reads the same in both: up to two decimals and no trailing zeros;
// three significant digits in exponent form where two decimals would print 0 for a value that is not (below
// 0.01) or grow unreadable (1e9 and above), so a scale-in threshold of 8e-09 does not print as 0 beside a
// finding that says it rounds to 0.
//
// The values that are not numbers in that sense print as what they mean in prose: +Inf as "∞" (the
// per-instance concurrency of a load the measured throughput curve never reaches: requests queue without
// bound), -Inf as "-∞", and NaN as "NaN", never as a number it is not. Negative zero prints as "0".
func FormatNumber(x float64) string { return loadmodel.Format(x) }

// exact formats a number a user gave in its shortest exact form: a surge of 1.4999999999 prints as
// 1.4999999999, not as the 1.5 it must stay below. Infinities and NaN print as FormatNumber prints them.
// Derived numbers, which carry float noise, print with FormatNumber.
func exact(x float64) string {
	if math.IsInf(x, 0) || math.IsNaN(x) {
		return FormatNumber(x)
	}
	return strconv.FormatFloat(x, 'g', -1, 64)
}
