package editdistance

import "testing"

func TestLevenshtein(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"kokoro-28m", "kokoro-82m", 2}, {"us-est-1", "us-east-1", 1},
		{"espeek-ng", "espeak-ng", 1}, {"flaw", "lawn", 2}, {"kitten", "sitting", 3}, {"é", "e", 1},
	} {
		if got := Levenshtein(c.a, c.b); got != c.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Levenshtein(c.b, c.a); got != c.want {
			t.Errorf("Levenshtein(%q, %q) = %d, want %d (symmetric)", c.b, c.a, got, c.want)
		}
	}
}
