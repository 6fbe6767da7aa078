package segment

import (
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
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

// FuzzSplit checks that splitting loses nothing but whitespace and keeps every
// segment non-empty, trimmed and within MaxRunes.
func FuzzSplit(f *testing.F) {
	for _, s := range []string{"Hello, world. How are you?", "3.14 e.g. x", "a\n\nb", "……!!", strings.Repeat("ab ", 200)} {
		f.Add(s)
	}
	squeeze := func(s string) string {
		return strings.Map(func(r rune) rune {
			if unicode.IsSpace(r) {
				return -1
			}
			return r
		}, s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		if !utf8.ValidString(text) {
			return
		}
		segs := Split(text)
		for _, s := range segs {
			if s == "" || s != strings.TrimSpace(s) || utf8.RuneCountInString(s) > MaxRunes {
				t.Fatalf("bad segment %q", s)
			}
		}
		if got, want := squeeze(strings.Join(segs, "")), squeeze(text); got != want {
			t.Fatalf("segments %q lost text of %q", segs, text)
		}
	})
}
