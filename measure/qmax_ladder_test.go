package measure

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseLadder(t *testing.T) {
	for _, tt := range []struct{ in, err string }{
		{"1,2,4", ""}, {"4", ""}, {" 1, 2 ", ""}, {"", "is not a concurrency"}, {"1,,2", "is not a concurrency"},
		{"0,1", "is not a concurrency"}, {"2,1", "1 follows 2"}, {"1,1", "1 follows 1"}, {"1,x", `"x" is not`}, {"-1", "is not a concurrency"},
	} {
		_, err := ParseLadder(tt.in)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) {
			t.Errorf("ParseLadder(%q) = %v, want %q", tt.in, err, tt.err)
		}
	}
}

// The rate staircase's fractions increase in (0, 10]; none or nothing is no rate staircase; JoinFloats prints
// them back as the flag takes them.
func TestParseRateFractions(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []float64
		err  string
	}{
		{"0.3,0.5,1.1", []float64{0.3, 0.5, 1.1}, ""}, {"none", nil, ""}, {"", nil, ""}, {" 1 ", []float64{1}, ""},
		{"0.5,0.3", nil, "0.3 follows 0.5"}, {"0,1", nil, `"0" is not a fraction`}, {"x", nil, `"x" is not a fraction`}, {"11", nil, "is not a fraction"},
	} {
		got, err := ParseRateFractions(tt.in)
		if (err == nil) != (tt.err == "") || (err != nil && !strings.Contains(err.Error(), tt.err)) || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseRateFractions(%q) = %v, %v; want %v, %q", tt.in, got, err, tt.want, tt.err)
		}
	}
	if got := JoinFloats([]float64{0.3, 0.5, 1.1}); got != "0.3,0.5,1.1" {
		t.Errorf("JoinFloats = %q", got)
	}
}
