package autoscale

import (
	"testing"
	"time"
)

// The compression is the largest divisor of 10 s among 1, 2, 5 and 10 not above the time scale, so every AWS
// period and cooldown divided by it stays whole seconds.
func TestCompression(t *testing.T) {
	for _, c := range []struct {
		scale float64
		want  int
	}{{0.5, 1}, {1, 1}, {1.9, 1}, {2, 2}, {4.99, 2}, {5, 5}, {9, 5}, {10, 10}, {50, 10}, {1000, 10}} {
		f := Compression(c.scale)
		if f != c.want {
			t.Errorf("Compression(%g) = %d, want %d", c.scale, f, c.want)
		}
		if !ValidCompression(f) {
			t.Errorf("Compression(%g) = %d is not a valid factor", c.scale, f)
		}
		for _, aws := range []time.Duration{10 * time.Second, 20 * time.Second, 30 * time.Second, time.Minute, DefaultCooldown} {
			if d := Compress(aws, f); d%time.Second != 0 || d < time.Second {
				t.Errorf("%s ÷ %d = %s: not whole seconds", aws, f, d)
			}
		}
	}
	if ValidCompression(3) || ValidCompression(0) {
		t.Error("3 and 0 are valid compressions; want only 1, 2, 5 and 10")
	}
	if Compress(DefaultCooldown, 10) != 30*time.Second || CompressS(60, 10) != 6 || CompressS(60, 0) != 60 {
		t.Error("Compress: want 300 s ÷ 10 = 30 s, 60 s ÷ 10 = 6 s, and factor 0 counted as 1")
	}
}
