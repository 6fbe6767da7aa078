package kokoro

import (
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/container/internal/espeak"
)

// What NormalizeEnglish writes for each category; the golden test checks the
// phonemes of the same kinds of text against the reference.
func TestNormalizeEnglishTable(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		// thousands separators, decimals
		{"There are 3,000,000 people.", "There are 3000000 people."},
		{"It weighs 2.5 kg, not .75 or 3.14.", "It weighs 2 point 5 kg, not  point 7 5 or 3 point 1 4."},
		{"Version 1.2.3", "Version 1 point 2 point 3"},
		// money
		{"Your balance is $1,234.56.", "Your balance is 1234 dollars and 56 cents."},
		{"$1 and $5 and $0.01 and $2.5", "1 dollar and 5 dollars and 0 dollars and 1 cent and 2 dollars and 50 cents"},
		{"£1.01, £3.50 and £12", "1 pound and 1 penny, 3 pounds and 50 pence and 12 pounds"},
		{"$3 million and £1.5 Billion", "3 million dollars and 1 point 5 Billion pounds"},
		{"$5.5m", "5 dollars point 5m"},
		// clock times
		{"at 9:00, 9:05, 9:15 and 12:59", "at 9 o'clock, 9 oh 5, 9 15 and 12 59"},
		{"13:30, 0:30, 12:30:45, 16:9", "13:30, 0:30, 12:30:45, 16:9"},
		// years and decades
		{"in 1987, 1905, 1900, 2010, the 1990s", "in 19 87, 19 oh 5, 19 hundred, 20 10, the 19 90s"},
		{"1066 1000 2000 2005 2000s 12345", "1066 1000 2000 2005 2000s 12345"},
		// ranges and scores
		{"He scored 3-2 in 1914-1918.", "He scored 3 to 2 in 19 14 to 19 18."},
		{"a - b and 3 - 2", "a - b and 3 - 2"},
		// titles, etc., yeah
		{"Mr. Johnson met Dr. Patel and Mrs. Smith and Ms. Lee.", "Mister Johnson met Doctor Patel and Mrs Smith and Miss Lee."},
		{"DR. JONES, MR. X and dr. who", "Doctor JONES, Mister X and dr. who"},
		{"Dr. smith", "Dr. smith"},
		{"pens, etc. and more etc.", "pens, etc. and more etc"},
		{"Yeah, yea, yeahs", "Ye'a, ye'a, yeahs"},
		// dotted acronyms
		{"The U.S.A. and the U.K. met.", "The U-S-A- and the U-K- met."},
		{"In the U.S.A. Then the U.K.", "In the U-S-A. Then the U-K."},
		{"Use e.g. a hammer", "Use e-g- a hammer"},
		// plurals and possessives of capitals
		{"CDs, the CEO's plan, the FBI's, the 90S, the X's and Xs", "CD'S, the CEO's plan, the FBI's, the 90 S, the X's and X's"},
		{"Thanks, Bob's", "Thanks, Bob's"},
		// non-ASCII around numbers
		{"café 2.5 €3", "café 2 point 5 €3"},
	} {
		if got := NormalizeEnglish(c.in); got != c.want {
			t.Errorf("NormalizeEnglish(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}

// Punctuation inside a number never reaches the punctuation splitter: after
// normalization the only punctuation sections are the text's own.
func TestNumberPunctuationNeverReachesTheSplitter(t *testing.T) {
	text := NormalizeEnglish(Normalize("Pay $1,234.56 at 9:15, weigh 2.5 kg, count 3,000,000; score 3-2."))
	var marks []string
	for _, s := range SplitPunctuation(text) {
		if s.Punct {
			marks = append(marks, strings.TrimSpace(s.Text))
		}
	}
	if got := strings.Join(marks, "|"); got != ",|,|;|." {
		t.Errorf("punctuation sections %q of %q, want only the sentence's , , ; .", got, text)
	}
}

// The English rules are English only: other voices' text reaches espeak-ng
// (the real one) with its numbers as written.
func TestG2PNormalizesEnglishOnly(t *testing.T) {
	espeakReady(t)
	g2p := func(text, lang string) string {
		ps, err := G2P(text, lang, espeak.Phonemes)
		if err != nil {
			t.Fatal(err)
		}
		return ps
	}
	for _, lang := range []string{"en-us", "en"} {
		if a, b := g2p("He paid $5 at 9:15.", lang), g2p("He paid 5 dollars at 9 15.", lang); a != b {
			t.Errorf("%s: %s vs %s", lang, a, b)
		}
	}
	for _, lang := range []string{"es", "fr"} {
		if a, b := g2p("He paid $5 at 9:15.", lang), g2p("He paid 5 dollars at 9 15.", lang); a == b {
			t.Errorf("%s: English normalization applied: %s", lang, a)
		}
		if ps := g2p("9:15", lang); !strings.Contains(ps, ":") {
			t.Errorf("%s: the colon of 9:15 was not kept as punctuation: %s", lang, ps)
		}
	}
}

// Every voice language letter names a voice the real libespeak-ng can select
// (French once asked for "fr-fr", which 1.51 does not have, failing every
// French request).
func TestEveryVoiceLanguageIsInstalled(t *testing.T) {
	espeakReady(t)
	for _, voice := range []string{"af_heart", "bf_emma", "ef_dora", "ff_siwis", "hf_alpha", "if_sara", "pf_dora"} {
		ps, err := G2P("Hello 12", LangForVoice(voice), espeak.Phonemes)
		if err != nil || ps == "" {
			t.Errorf("%s (%s): %q, %v", voice, LangForVoice(voice), ps, err)
		}
	}
}
