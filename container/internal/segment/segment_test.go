package segment

import (
	"reflect"
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"Hello world.", []string{"Hello world."}},
		{"Hello, world. How are you?", []string{"Hello,", "world.", "How are you?"}},
		{"Wait... what?! Yes; no: maybe — ok", []string{"Wait...", "what?!", "Yes;", "no:", "maybe —", "ok"}},
		{"Pi is 3.14, e.g. here.", []string{"Pi is 3.14,", "e.g.", "here."}},
		{"He said \"stop.\" Then left.", []string{"He said \"stop.\"", "Then left."}},
		{"  no boundary  ", []string{"no boundary"}},
		{"Line one\nLine two", []string{"Line one", "Line two"}},
		{"End.\nNext", []string{"End.", "Next"}},
		{"", nil},
		{" , ", []string{","}},
	}
	for _, c := range cases {
		if got := Split(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestSplitLongRunIsCutAtSpaces(t *testing.T) {
	text := strings.Repeat("word ", 200) // 1000 runes, no punctuation
	segs := Split(text)
	if len(segs) < 4 {
		t.Fatalf("got %d segments, want at least 4", len(segs))
	}
	for _, s := range segs {
		if n := len([]rune(s)); n > MaxRunes {
			t.Errorf("segment of %d runes exceeds %d", n, MaxRunes)
		}
		if strings.HasPrefix(s, "ord") {
			t.Errorf("segment %q starts inside a word", s[:10])
		}
	}
	if got := strings.Join(segs, " "); got != strings.TrimSpace(text) {
		t.Errorf("segments do not rejoin to the text")
	}
}
