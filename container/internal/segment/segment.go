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
// "e.g." inside words stay whole. Joining the segments with single spaces
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
		// Take the whole run of punctuation (and closing quotes) with it.
		for i+1 < len(runes) && (isBoundary(runes[i+1]) || strings.ContainsRune("\"')]”’»", runes[i+1])) {
			i++
			cur.WriteRune(runes[i])
		}
		if runes[i] == '\n' || i+1 == len(runes) || unicode.IsSpace(runes[i+1]) {
			flush()
		}
	}
	flush()
	return segs
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
