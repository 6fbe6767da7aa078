package capacity

import (
	"math"
	"testing"
)

func TestFormatNumber(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{0, "0"},
		{math.Copysign(0, -1), "0"},
		{-0.001, "-0.001"},
		{-0.0001, "-0.0001"},
		{1, "1"},
		{37.5, "37.5"},
		{2.0 / 3, "0.67"},
		{12.345, "12.35"},
		{100, "100"},
		{0.01, "0.01"},
		{0.00999, "0.00999"},
		{8e-09, "8e-09"},
		{-8e-09, "-8e-09"},
		{999_999_999.994, "999999999.99"},
		{1e9, "1e+09"},
		{123_456_789_012, "1.23e+11"},
		{math.MaxFloat64, "1.8e+308"},
		{math.SmallestNonzeroFloat64, "4.94e-324"},
		{math.Inf(1), "∞"},
		{math.Inf(-1), "-∞"},
		{math.NaN(), "NaN"},
	} {
		if got := FormatNumber(c.x); got != c.want {
			t.Errorf("FormatNumber(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}

func TestExactPrintsUserInputsInFull(t *testing.T) {
	for _, c := range []struct {
		x    float64
		want string
	}{
		{1.4999999999, "1.4999999999"},
		{1.25, "1.25"},
		{1e-12, "1e-12"},
		{math.Inf(1), "∞"},
		{math.Inf(-1), "-∞"},
		{math.NaN(), "NaN"},
	} {
		if got := exact(c.x); got != c.want {
			t.Errorf("exact(%v) = %q, want %q", c.x, got, c.want)
		}
	}
}
