// Package segment splits request text into synthesis segments at sentence and
// clause boundaries, so the first audio of a request can be produced from a
// short first segment while the rest waits its turn.
package segment

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxRunes is the longest segment Split returns; longer stretches without a
// boundary are cut at the last space before the limit (or hard at the limit).
const MaxRunes = 300

// isBoundary reports whether r ends a sentence or a clause.
func isBoundary(r rune) bool {
	switch r {
	case '.', '!', '?', '…', ';', ':', ',', '—', '\n':
		return true
	}
	return false
}

// Split returns the non-empty, whitespace-trimmed segments of text in order.
// A segment ends after a run of boundary punctuation (kept with the segment it
// closes) that is followed by whitespace or the end of text, so "3.14" and
// "e.g." inside words stay whole, except a lone period of an abbreviation (see
// abbreviationPeriod): "Mr. Johnson", "e.g. a hammer" stay in one segment. Joining the segments with single spaces
// gives text with its whitespace collapsed at the cut points.
func Split(text string) []string {
	var segs []string
	var cur strings.Builder
	flush := func() {
		s := strings.TrimSpace(cur.String())
		cur.Reset()
		for utf8.RuneCountInString(s) > MaxRunes {
			head, tail := cutAt(s, MaxRunes)
			segs = append(segs, head)
			s = tail
		}
		if s != "" {
			segs = append(segs, s)
		}
	}
	runes := []rune(text)
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		cur.WriteRune(r)
		if !isBoundary(r) {
			continue
		}
		runStart := i
		// Take the whole run of punctuation (and closing quotes) with it.
		for i+1 < len(runes) && (isBoundary(runes[i+1]) || strings.ContainsRune("\"')]”’»", runes[i+1])) {
			i++
			cur.WriteRune(runes[i])
		}
		if runes[i] == '\n' || i+1 == len(runes) || unicode.IsSpace(runes[i+1]) {
			if i == runStart && r == '.' && abbreviationPeriod(runes, i) {
				continue
			}
			flush()
		}
	}
	flush()
	return segs
}

// titles are the abbreviations whose period never ends a sentence: the
// kokoro front end reads "Mr. Johnson" as "Mister Johnson", one phrase.
var titles = map[string]bool{"mr": true, "mrs": true, "ms": true, "dr": true}

// abbreviationPeriod reports whether the lone period at runes[i], followed by
// whitespace and more text on the line, closes an abbreviation rather than a
// sentence: a title (Mr. Mrs. Ms. Dr.), or "etc." or a dotted abbreviation
// (e.g. i.e. p.m.) before a lower-case word ("e.g. a hammer").
func abbreviationPeriod(runes []rune, i int) bool {
	j := i + 1
	for j < len(runes) && unicode.IsSpace(runes[j]) && runes[j] != '\n' {
		j++
	}
	if j == len(runes) || runes[j] == '\n' {
		return false
	}
	k := i
	for k > 0 && (unicode.IsLetter(runes[k-1]) || runes[k-1] == '.') {
		k--
	}
	word := strings.ToLower(string(runes[k:i]))
	if titles[word] {
		return true
	}
	if !unicode.IsLower(runes[j]) {
		return false
	}
	if word == "etc" {
		return true
	}
	// letter(.letter)+, as in "e.g" or "p.m"
	w := []rune(word)
	if len(w) < 3 || len(w)%2 == 0 {
		return false
	}
	for n, r := range w {
		if (n%2 == 0) != unicode.IsLetter(r) || (n%2 == 1) != (r == '.') {
			return false
		}
	}
	return true
}

// cutAt splits s (longer than n runes) at the last space within its first n
// runes, or at n runes when there is none; both parts are trimmed.
func cutAt(s string, n int) (string, string) {
	runes := []rune(s)
	cut := n
	for i := n; i > n/2; i-- {
		if unicode.IsSpace(runes[i]) {
			cut = i
			break
		}
	}
	return strings.TrimSpace(string(runes[:cut])), strings.TrimSpace(string(runes[cut:]))
}

// FirstTargetRunes is the length ShortenFirst aims the first segment at: 40
// characters, about 2.4 s of speech at a normal rate. It is enough audio to
// hide the next segment's compute behind it, and short enough to cut the
// first segment's compute (which grows with its length for espeak-ng and
// Kokoro) by about a third for a typical 60-character sentence; see the
// container README, "Scheduling", for the measurements.
const FirstTargetRunes = 40

// ShortenFirst cuts segs[0] in two at a word boundary near target runes when
// it is longer than one and a half times target, so that a request's first
// audio comes sooner; the rest of the sentence becomes the second segment.
// Both parts keep at least target/2 runes, so no segment becomes tiny, and
// a cut right after a word that leans on the next ("to", "the", "your")
// is avoided when another boundary is within reach, and a space after a
// period (an abbreviation such as "Mr." that Split kept
// inside the sentence) is never a cut. Later segments are left alone: only
// the first one gates the first audio. segs is not modified.
func ShortenFirst(segs []string, target int) []string {
	if len(segs) == 0 || target < 2 {
		return segs
	}
	runes := []rune(segs[0])
	n := len(runes)
	if n <= target+target/2 {
		return segs
	}
	cut, best := -1, 0
	for i := target / 2; i <= n-target/2; i++ {
		if !unicode.IsSpace(runes[i]) || runes[i-1] == '.' || unicode.IsSpace(runes[i-1]) {
			continue
		}
		cost := abs(i - target)
		if leansForward[strings.ToLower(lastWord(runes[:i]))] {
			cost += target
		}
		if cut < 0 || cost < best {
			cut, best = i, cost
		}
	}
	if cut < 0 {
		return segs
	}
	out := make([]string, 0, len(segs)+1)
	out = append(out, strings.TrimSpace(string(runes[:cut])), strings.TrimSpace(string(runes[cut:])))
	return append(out, segs[1:]...)
}

// leansForward are words that belong with the word after them (articles,
// prepositions, conjunctions, possessives, auxiliaries): a cut right after
// one leaves it dangling at the end of the first audio ("your call to |
// the billing department"), so ShortenFirst prefers any other boundary
// within reach.
var leansForward = map[string]bool{
	"a": true, "an": true, "the": true, "to": true, "of": true, "in": true, "on": true, "at": true, "for": true,
	"with": true, "from": true, "by": true, "and": true, "or": true, "but": true, "my": true, "your": true,
	"our": true, "their": true, "his": true, "her": true, "its": true, "is": true, "are": true, "was": true,
	"were": true, "be": true, "will": true, "i": true, "that": true, "this": true,
}

// lastWord is the run of letters and apostrophes that ends runes.
func lastWord(runes []rune) string {
	k := len(runes)
	for k > 0 && (unicode.IsLetter(runes[k-1]) || runes[k-1] == '\'') {
		k--
	}
	return string(runes[k:])
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
