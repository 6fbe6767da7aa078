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
