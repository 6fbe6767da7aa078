package measure

import (
	"strings"
	"testing"
)

func TestParseShard(t *testing.T) {
	for in, want := range map[string][2]int{"0/1": {0, 1}, "3/4": {3, 4}, "999/1000": {999, 1000}} {
		if got, err := ParseShard(in); err != nil || got != want {
			t.Errorf("ParseShard(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for in, want := range map[string]string{"": "want i/n", "1": "want i/n", "a/b": "want i/n", "0/0": "the shard count 0", "0/1001": "the shard count 1001",
		"4/4": "the shard index 4: want 0 to 3", "-1/4": "the shard index -1"} {
		if _, err := ParseShard(in); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseShard(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

func TestValidRunID(t *testing.T) {
	for _, ok := range []string{"a", "run-1.2_x", strings.Repeat("x", 64)} {
		if !ValidRunID(ok) {
			t.Errorf("ValidRunID(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a b", strings.Repeat("x", 65), "é"} {
		if ValidRunID(bad) {
			t.Errorf("ValidRunID(%q) = true", bad)
		}
	}
}
