package cloud

import "testing"

// validate prints the latency alarm's threshold in microseconds with its unit (and in ms beside it), never as a
// raw float such as 1e+06.
func TestThresholdTextNamesItsUnit(t *testing.T) {
	for _, tc := range []struct {
		metric string
		v      float64
		want   string
	}{
		{"ModelLatency", 3e6, "GreaterThanThreshold 3000000 µs (3000 ms)"},
		{"ConcurrentRequestsPerModel", 11.25, "GreaterThanThreshold 11.25 requests"},
	} {
		if got := thresholdText(tc.metric, "GreaterThanThreshold", tc.v); got != tc.want {
			t.Errorf("thresholdText(%s, %g) = %q, want %q", tc.metric, tc.v, got, tc.want)
		}
	}
}
