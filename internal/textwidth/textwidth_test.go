package textwidth

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"
)

// Every line Wrap writes fits the width (but for a word longer than it), keeps the words in order, and a
// run of spaces inside a line stays.
func TestWrapFitsAndKeepsTheWords(t *testing.T) {
	s := "05:32  2 → 3  the metric 34.05 is above the target 33.98: 2 × 34.05 / 33.98 rounded up is 3; serving at 05:37 " +
		strings.Repeat("word ", 40) + "https://example.com/" + strings.Repeat("x", 120)
	out := Wrap(s, 60, "  ", "      ")
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) < 3 {
		t.Fatalf("wrapped into %d lines:\n%s", len(lines), out)
	}
	for _, l := range lines {
		if n := utf8.RuneCountInString(l); n > 60 && !strings.Contains(l, "xxxx") {
			t.Errorf("line of %d runes over 60: %q", n, l)
		}
	}
	if !strings.HasPrefix(lines[0], "  05:32  2 → 3  the") || !strings.HasPrefix(lines[1], "      ") {
		t.Errorf("first line %q, second %q: want the first prefix, the double spaces kept, then the hanging indent", lines[0], lines[1])
	}
	if got := strings.Join(strings.Fields(out), " "); got != strings.Join(strings.Fields(s), " ") {
		t.Errorf("the words changed:\n%s\n%s", got, s)
	}
	if got := Wrap("", 60, "  ", "  "); got != "\n" {
		t.Errorf("Wrap of nothing = %q, want an empty line", got)
	}
}

// A table keeps its columns and wraps its last column under itself; when the columns before it leave too
// little room, the text goes below the row.
func TestTableWrapsItsLastColumn(t *testing.T) {
	var b bytes.Buffer
	note := strings.Repeat("because ", 30)
	if err := Table(&b, 80, "  ", [][]string{{"name", "value", "note"}, {"safe_rps", "14.97 rps", note}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	col := strings.Index(lines[0], "note")
	for i, l := range lines {
		if utf8.RuneCountInString(l) > 80 {
			t.Errorf("line %d over 80: %q", i, l)
		}
		if i > 1 && strings.TrimSpace(l[:col]) != "" {
			t.Errorf("continuation line %d does not start under the column at %d: %q", i, col, l)
		}
	}
	b.Reset()
	wide := strings.Repeat("v", 50)
	if err := Table(&b, 80, "  ", [][]string{{"name", wide, note}}); err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if strings.Contains(lines[0], "because") || !strings.HasPrefix(lines[1], "      because") {
		t.Errorf("with 24 columns left the note must go below the row:\n%s", b.String())
	}
}

func TestWidthOfANonTerminalIsTheDefault(t *testing.T) {
	if w := Width(&bytes.Buffer{}); w != Default {
		t.Errorf("Width(buffer) = %d, want %d", w, Default)
	}
}
