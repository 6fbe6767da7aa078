// Package kokoro is the kokoro engine: Kokoro-82M's ONNX export run through
// ONNX Runtime, with G2P through espeak-ng IPA plus the fix-ups the Kokoro
// reference implementations apply, a tokenizer.json vocabulary and
// voices/<name>.bin style tables.
package kokoro

import (
	"strings"
	"unicode"
)

// Punctuation is kept verbatim around espeak-ng's phonemes (espeak-ng drops
// it), as the Kokoro reference G2P does.
const Punctuation = ";:,.!?¡¿—…\"«»“”(){}[]"

func isPunct(r rune) bool { return strings.ContainsRune(Punctuation, r) }

// The replacers of Normalize and FixUp, built once: they run on every segment.
var (
	normalizeReplacer = strings.NewReplacer(
		"‘", "'", "’", "'",
		"«", "\"", "»", "\"", "“", "\"", "”", "\"",
		"(", "«", ")", "»",
		"、", ", ", "。", ". ", "！", "! ", "，", ", ", "：", ": ", "；", "; ", "？", "? ",
	)
	kokoroWordReplacer = strings.NewReplacer(
		"kəkˈoːɹoʊ", "kˈoʊkəɹoʊ",
		"kəkˈɔːɹəʊ", "kˈəʊkəɹəʊ",
	)
	missingPhonemeReplacer = strings.NewReplacer("ʲ", "j", "r", "ɹ", "x", "k", "ɬ", "l")
)

// Normalize applies the reference G2P's text clean-ups that do not depend on
// a language model: curly quotes, brackets, full-width punctuation and
// whitespace. Numbers, currencies and abbreviations are NormalizeEnglish's.
func Normalize(text string) string {
	text = normalizeReplacer.Replace(text)
	var b strings.Builder
	space := false
	for _, c := range text {
		if unicode.IsSpace(c) && c != '\n' {
			if !space {
				b.WriteRune(' ')
			}
			space = true
			continue
		}
		space = false
		b.WriteRune(c)
	}
	return strings.TrimSpace(b.String())
}

// Section is a piece of normalized text: either a run of punctuation (with
// the whitespace around it), kept as is, or words for espeak-ng.
type Section struct {
	Text  string
	Punct bool
}

// SplitPunctuation cuts text into alternating word and punctuation sections;
// a punctuation section takes the whitespace on both sides of its marks.
func SplitPunctuation(text string) []Section {
	runes := []rune(text)
	var out []Section
	start := 0
	i := 0
	for i < len(runes) {
		// A punctuation section: optional spaces, marks, spaces, repeated.
		j := i
		for j < len(runes) && unicode.IsSpace(runes[j]) {
			j++
		}
		if j < len(runes) && isPunct(runes[j]) {
			k := j
			for k < len(runes) && (isPunct(runes[k]) || unicode.IsSpace(runes[k])) {
				k++
			}
			if start < i {
				out = append(out, Section{Text: string(runes[start:i])})
			}
			out = append(out, Section{Text: string(runes[i:k]), Punct: true})
			i, start = k, k
			continue
		}
		i++
	}
	if start < len(runes) {
		out = append(out, Section{Text: string(runes[start:])})
	}
	return out
}

// FixUp applies the reference post-processing to espeak-ng IPA: the Kokoro
// word itself, phonemes the model has no token for (ʲ r x ɬ), a space before
// "hundred" after a number word, a detached plural "z" rejoined before
// punctuation, and (American English) "ninety" flapped to "di".
func FixUp(ps string, american bool) string {
	ps = kokoroWordReplacer.Replace(ps)
	ps = missingPhonemeReplacer.Replace(ps)
	ps = spaceBeforeHundred(ps)
	ps = joinPluralZ(ps)
	if american {
		ps = ninetyDi(ps)
	}
	return ps
}

const hundred = "hˈʌndɹɪd"

// spaceBeforeHundred inserts a space where "hundred" directly follows a
// letter, ɹ or ː.
func spaceBeforeHundred(ps string) string {
	var b strings.Builder
	rest := ps
	for {
		i := strings.Index(rest, hundred)
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		b.WriteString(rest[:i])
		if i > 0 {
			prev := []rune(rest[:i])
			p := prev[len(prev)-1]
			if (p >= 'a' && p <= 'z') || p == 'ɹ' || p == 'ː' {
				b.WriteByte(' ')
			}
		}
		b.WriteString(hundred)
		rest = rest[i+len(hundred):]
	}
}

// joinPluralZ turns " z" into "z" when punctuation, a space or the end
// follows.
func joinPluralZ(ps string) string {
	runes := []rune(ps)
	var out []rune
	for i := 0; i < len(runes); i++ {
		if runes[i] == ' ' && i+1 < len(runes) && runes[i+1] == 'z' {
			if i+2 == len(runes) || isPunct(runes[i+2]) || runes[i+2] == ' ' {
				continue // drop the space
			}
		}
		out = append(out, runes[i])
	}
	return string(out)
}

// ninetyDi replaces "ti" after "nˈaɪn" with "di" unless a length mark follows.
func ninetyDi(ps string) string {
	const nine = "nˈaɪn"
	var b strings.Builder
	rest := ps
	for {
		i := strings.Index(rest, nine+"ti")
		if i < 0 {
			b.WriteString(rest)
			return b.String()
		}
		after := rest[i+len(nine)+2:]
		b.WriteString(rest[:i+len(nine)])
		if strings.HasPrefix(after, "ː") {
			b.WriteString("ti")
		} else {
			b.WriteString("di")
		}
		rest = after
	}
}

// Phonemizer turns words into IPA for a language; espeak.Phonemes is the
// production one.
type Phonemizer func(text, lang string) (string, error)

// G2P converts text to Kokoro phonemes: normalize (for English, lang en-us or
// en, also NormalizeEnglish: numbers, money, times, titles, acronyms),
// phonemize each word section with espeak-ng in lang, keep punctuation
// sections verbatim, then apply FixUp (American rules when lang is en-us).
func G2P(text, lang string, phonemize Phonemizer) (string, error) {
	text = Normalize(text)
	if lang == "en-us" || lang == "en" {
		text = NormalizeEnglish(text)
	}
	var b strings.Builder
	for _, s := range SplitPunctuation(text) {
		if s.Punct {
			b.WriteString(s.Text)
			continue
		}
		ps, err := phonemize(s.Text, lang)
		if err != nil {
			return "", err
		}
		b.WriteString(ps)
	}
	return strings.TrimSpace(FixUp(b.String(), lang == "en-us")), nil
}

// LangForVoice returns the espeak-ng language for a Kokoro voice name, whose
// first letter is its language: a American English, b British English, e
// Spanish, f French ("fr": libespeak-ng 1.51 has no voice named "fr-fr"), h Hindi, i Italian, p Brazilian Portuguese.
func LangForVoice(voice string) string {
	if voice == "" {
		return "en-us"
	}
	switch voice[0] {
	case 'b':
		return "en"
	case 'e':
		return "es"
	case 'f':
		return "fr"
	case 'h':
		return "hi"
	case 'i':
		return "it"
	case 'p':
		return "pt-br"
	}
	return "en-us"
}
