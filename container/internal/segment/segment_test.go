package segment

import (
	"reflect"
	"slices"
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
		{"Pi is 3.14, e.g. here.", []string{"Pi is 3.14,", "e.g. here."}},
		// A title's period is not a sentence end; nor is that of etc. or e.g. before a lower-case word.
		{"Mr. Johnson met Dr. Patel. Then Mrs. Smith left.", []string{"Mr. Johnson met Dr. Patel.", "Then Mrs. Smith left."}},
		{"MS. JONES IS LATE. Ms. Lee is here.", []string{"MS. JONES IS LATE.", "Ms. Lee is here."}},
		{"Bring pens, paper, etc. to the exam.", []string{"Bring pens,", "paper,", "etc. to the exam."}},
		{"Meet at 3 p.m. today. Bye.", []string{"Meet at 3 p.m. today.", "Bye."}},
		// Only a lone period: other marks still cut, and a title at the end of a line still ends it.
		{"Hello, world. Wait! ok", []string{"Hello,", "world.", "Wait!", "ok"}},
		{"Ask Dr.\nNext", []string{"Ask Dr.", "Next"}},
		{"Call Mr.", []string{"Call Mr."}},
		{"He saw Mr.. Then left.", []string{"He saw Mr..", "Then left."}},
		{"Hamr. Johnson", []string{"Hamr.", "Johnson"}},
		{"r0 s0. r0 s1.", []string{"r0 s0.", "r0 s1."}},
		{"We sold pens, etc. The end.", []string{"We sold pens,", "etc.", "The end."}},
		{"It is the U.S. Then again.", []string{"It is the U.S.", "Then again."}},
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

func TestShortenFirst(t *testing.T) {
	long := "Please hold while I transfer your call to the billing department."
	cases := []struct {
		name string
		in   []string
		want []string
	}{
		{"cut near the target at a space", []string{long, "Thank you."},
			[]string{"Please hold while I transfer your call", "to the billing department.", "Thank you."}},
		{"short enough already", []string{"Your order has shipped.", "It arrives Thursday."},
			[]string{"Your order has shipped.", "It arrives Thursday."}},
		{"exactly one and a half targets stays", []string{strings.Repeat("abcd ", 12)[:60]}, []string{strings.Repeat("abcd ", 12)[:60]}},
		{"no space to cut at", []string{strings.Repeat("x", 90)}, []string{strings.Repeat("x", 90)}},
		{"never after an abbreviation's period", []string{"Our new account manager Mr. Johnson will call you back tomorrow."},
			[]string{"Our new account manager Mr. Johnson", "will call you back tomorrow."}},
		{"empty", nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := slices.Clone(c.in)
			got := ShortenFirst(c.in, FirstTargetRunes)
			if !slices.Equal(got, c.want) {
				t.Errorf("ShortenFirst(%q) = %q, want %q", c.in, got, c.want)
			}
			if !slices.Equal(in, c.in) {
				t.Errorf("the input was modified: %q", c.in)
			}
			for i, s := range got {
				if i < 2 && len(got) > len(c.in) && utf8.RuneCountInString(s) < FirstTargetRunes/2 {
					t.Errorf("part %d %q is under half the target", i, s)
				}
			}
		})
	}
	// Every cut keeps both parts at half the target or more, whatever the
	// sentence.
	for n := 61; n < 200; n += 7 {
		words := strings.Fields(strings.Repeat("a bb ccc dddd eeeee ", 20))
		s := strings.TrimSpace(strings.Join(words, " ")[:n])
		got := ShortenFirst([]string{s}, FirstTargetRunes)
		if len(got) == 2 && (utf8.RuneCountInString(got[0]) < 20 || utf8.RuneCountInString(got[1]) < 20 || got[0]+" "+got[1] != s) {
			t.Errorf("n=%d: cut %q | %q", n, got[0], got[1])
		}
	}
}
