package kokoro

import (
	"strconv"
	"strings"
)

// NormalizeEnglish rewrites English text into words espeak-ng reads the way
// the Kokoro reference front end does (kokoro-js 1.2.1's phonemizer, checked
// against it with the golden corpus in testdata/g2p). It runs after Normalize
// and before SplitPunctuation, so the punctuation inside a number (the comma
// of 1,234, the point of 2.5, the colon of 9:15) never reaches the splitter.
//
// The passes, in order (each sees the output of the one before):
//
//   - titles: "Mr." → Mister, "Mrs." → Mrs, "Ms." → Miss anywhere; "Dr."/"DR."
//     → Doctor and the all-caps "MR." "MRS." "MS." only before a space and a
//     capital letter; "etc." → etc unless a space and a letter of either case
//     follow (then the period stays, as punctuation); "yeah"/"yea" → ye'a;
//   - one left-to-right pass over numbers: a decimal (digits, point, digits)
//     is kept for later; a standalone four-digit number, optionally with a
//     plural s, is read as a year (1987 → 19 87, 1905 → 19 oh 5, 1900 → 19
//     hundred, 1990s → 19 90s, 2010 → 20 10; below 1100 and x000–x009 are left
//     as numbers); a clock time h:mm with h 1–12 (9:00 → 9 o'clock, 9:05 → 9
//     oh 5, 9:15 → 9 15);
//   - thousands separators: a comma between digits is dropped;
//   - money: $ or £, digits, optional decimals, optional "hundred",
//     "thousand", "million", "billion", "trillion" words → "1234 dollars and
//     56 cents", "1 pound", "5 pounds and 1 penny", "3 million dollars";
//   - decimals: 2.5 → 2 point 5, digits after the point one by one;
//   - ranges and scores: a hyphen between digits → " to ";
//   - plurals and possessives of capitals: an S after a digit is set apart
//     (90S → 90 S); 's or s after a capital consonant becomes 'S (CDs →
//     CD'S) so espeak-ng spells the letters, except X's;
//   - dotted acronyms: letters with periods (U.S.A.) become hyphenated (U-S-A.)
//     so espeak-ng spells them as one word; a final period stays punctuation
//     unless a lower-case word follows.
//
// Word boundaries are ASCII ones, as in the reference: a letter, digit or
// underscore is a word character, anything else is not.
func NormalizeEnglish(text string) string {
	text = titles(text)
	text = numbers(text)
	text = dropThousandsCommas(text)
	text = money(text)
	text = decimals(text)
	text = ranges(text)
	text = capitalPlurals(text)
	text = dottedAcronyms(text)
	return strings.TrimSpace(text)
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isUpper(c byte) bool  { return c >= 'A' && c <= 'Z' }
func isLower(c byte) bool  { return c >= 'a' && c <= 'z' }
func isLetter(c byte) bool { return isUpper(c) || isLower(c) }
func isWord(c byte) bool   { return isLetter(c) || isDigit(c) || c == '_' }

// boundary reports whether position i of s (0..len(s)) is an ASCII word
// boundary.
func boundary(s string, i int) bool {
	before := i > 0 && isWord(s[i-1])
	after := i < len(s) && isWord(s[i])
	return before != after
}

// spaceCapital reports whether s[i:] starts with a space and a capital.
func spaceCapital(s string, i int) bool {
	return i+1 < len(s) && s[i] == ' ' && isUpper(s[i+1])
}

// title is one abbreviation rule: the spelling with its period, what it
// becomes, and whether it must be followed by a space and a capital letter.
type title struct {
	from, to    string
	needCapital bool
	anyCase     bool
}

var titleRules = []title{
	{"DR.", "Doctor", true, false},
	{"Dr.", "Doctor", true, false},
	{"Mr.", "Mister", false, false},
	{"MR.", "Mister", true, false},
	{"Ms.", "Miss", false, false},
	{"MS.", "Miss", true, false},
	{"Mrs.", "Mrs", false, false},
	{"MRS.", "Mrs", true, false},
}

// titles expands Mr. Mrs. Ms. Dr., drops the period of etc. inside a
// sentence and respells yeah.
func titles(s string) string {
	for _, r := range titleRules {
		s = replaceWord(s, r.from, false, func(s string, end int) (string, bool) {
			if r.needCapital && !spaceCapital(s, end) {
				return "", false
			}
			return r.to, true
		})
	}
	s = replaceWord(s, "etc.", true, func(s string, end int) (string, bool) {
		// The reference's lookahead is case-insensitive: any letter after a
		// space keeps the period ("etc. to" as well as "etc. The").
		if end+1 < len(s) && s[end] == ' ' && isLetter(s[end+1]) {
			return "", false
		}
		return "etc", true
	})
	for _, w := range []string{"yeah", "yea"} {
		s = replaceWord(s, w, true, func(s string, end int) (string, bool) {
			if !boundary(s, end) {
				return "", false
			}
			return s[end-len(w):end-len(w)+1] + "e'a", true
		})
	}
	return s
}

// replaceWord replaces each occurrence of word that starts at a word boundary
// with what repl returns for it (given the text and the end of the match);
// repl may decline. anyCase matches ASCII letters in either case.
func replaceWord(s, word string, anyCase bool, repl func(s string, end int) (string, bool)) string {
	var b strings.Builder
	last := 0
	for i := 0; i+len(word) <= len(s); i++ {
		cand := s[i : i+len(word)]
		if !(cand == word || anyCase && strings.EqualFold(cand, word)) || !boundary(s, i) {
			continue
		}
		to, ok := repl(s, i+len(word))
		if !ok {
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(to)
		last = i + len(word)
		i = last - 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// digitsAt returns the end of the run of digits starting at i.
func digitsAt(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}

// decimalAt returns the end of a decimal (digits, '.', at least one digit)
// starting at i, or -1.
func decimalAt(s string, i int) int {
	j := digitsAt(s, i)
	if j < len(s) && s[j] == '.' && j+1 < len(s) && isDigit(s[j+1]) {
		return digitsAt(s, j+1)
	}
	return -1
}

// numbers is the one pass over decimals (kept), years and clock times.
func numbers(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); {
		if end := decimalAt(s, i); end >= 0 {
			i = end // kept as is; decimals() reads it after the money pass
			continue
		}
		if end, ok := yearAt(s, i); ok {
			b.WriteString(s[last:i])
			b.WriteString(sayYear(s[i:end]))
			last, i = end, end
			continue
		}
		if end, ok := timeAt(s, i); ok {
			b.WriteString(s[last:i])
			b.WriteString(sayTime(s[i:end]))
			last, i = end, end
			continue
		}
		i++
	}
	b.WriteString(s[last:])
	return b.String()
}

// yearAt matches four digits and an optional s, as a whole word, at i.
func yearAt(s string, i int) (int, bool) {
	if !boundary(s, i) || i+4 > len(s) || digitsAt(s, i) < i+4 {
		return 0, false
	}
	if i+5 <= len(s) && s[i+4] == 's' && boundary(s, i+5) {
		return i + 5, true
	}
	if boundary(s, i+4) {
		return i + 4, true
	}
	return 0, false
}

// sayYear reads a four-digit number (optionally plural) as a year, in pairs.
func sayYear(w string) string {
	n, _ := strconv.Atoi(w[:4])
	if n < 1100 || n%1000 < 10 {
		return w
	}
	hi, lo := w[:2], n%100
	plural := w[4:]
	if n%1000 >= 100 {
		if lo == 0 {
			return hi + " hundred" + plural
		}
		if lo < 10 {
			return hi + " oh " + strconv.Itoa(lo) + plural
		}
	}
	return hi + " " + strconv.Itoa(lo) + plural
}

// timeAt matches h:mm (h 1–12, mm 00–59) as a whole word not touching
// another colon, at i.
func timeAt(s string, i int) (int, bool) {
	if !boundary(s, i) || (i > 0 && s[i-1] == ':') {
		return 0, false
	}
	for _, hl := range []int{1, 2} {
		j := i + hl
		if j+3 > len(s) || digitsAt(s, i) != j || s[j] != ':' {
			continue
		}
		h, _ := strconv.Atoi(s[i:j])
		if h < 1 || h > 12 || s[i] == '0' {
			continue
		}
		if s[j+1] < '0' || s[j+1] > '5' || !isDigit(s[j+2]) {
			continue
		}
		end := j + 3
		if !boundary(s, end) || (end < len(s) && s[end] == ':') {
			continue
		}
		return end, true
	}
	return 0, false
}

// sayTime reads h:mm the way a clock is read.
func sayTime(w string) string {
	h, m, _ := strings.Cut(w, ":")
	min, _ := strconv.Atoi(m)
	switch {
	case min == 0:
		return h + " o'clock"
	case min < 10:
		return h + " oh " + strconv.Itoa(min)
	}
	return h + " " + strconv.Itoa(min)
}

// dropThousandsCommas removes a comma with a digit on both sides.
func dropThousandsCommas(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == ',' && i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]) {
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

var moneyScales = []string{" hundred", " thousand", " million", " billion", " trillion"}

// money reads $ and £ amounts.
func money(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		var unit string
		var n int
		switch {
		case s[i] == '$':
			unit, n = "dollar", 1
		case strings.HasPrefix(s[i:], "£"):
			unit, n = "pound", len("£")
		default:
			continue
		}
		end, ok := amountAt(s, i+n)
		if !ok {
			continue
		}
		b.WriteString(s[last:i])
		b.WriteString(sayMoney(s[i+n:end], unit))
		last = end
		i = end - 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// amountAt matches digits, optional decimals and any scale words, ending at a
// word boundary; where the longest form does not end at one, shorter forms
// (fewer scale words, then no decimals) are tried.
func amountAt(s string, i int) (int, bool) {
	j := digitsAt(s, i)
	if j == i {
		return 0, false
	}
	starts := []int{}
	if d := decimalAt(s, i); d >= 0 {
		starts = append(starts, d)
	}
	starts = append(starts, j)
	for _, start := range starts {
		ends := []int{start}
		for k := start; ; {
			next := -1
			for _, w := range moneyScales {
				if k+len(w) <= len(s) && strings.EqualFold(s[k:k+len(w)], w) {
					next = k + len(w)
					break
				}
			}
			if next < 0 {
				break
			}
			ends = append(ends, next)
			k = next
		}
		for e := len(ends) - 1; e >= 0; e-- {
			if boundary(s, ends[e]) {
				return ends[e], true
			}
		}
	}
	return 0, false
}

// sayMoney reads an amount (without its symbol) in dollars or pounds.
func sayMoney(amount, unit string) string {
	if strings.Contains(amount, " ") {
		return amount + " " + unit + "s" // "3 million dollars"
	}
	whole, frac, hasFrac := strings.Cut(amount, ".")
	units := unit + "s"
	if whole == "1" {
		units = unit
	}
	if !hasFrac {
		return whole + " " + units
	}
	for len(frac) < 2 {
		frac += "0"
	}
	c, _ := strconv.Atoi(frac)
	sub := "cents"
	switch {
	case unit == "dollar" && c == 1:
		sub = "cent"
	case unit == "pound" && c == 1:
		sub = "penny"
	case unit == "pound":
		sub = "pence"
	}
	return whole + " " + units + " and " + strconv.Itoa(c) + " " + sub
}

// decimals reads 2.5 as "2 point 5" (and .75 as " point 7 5").
func decimals(s string) string {
	var b strings.Builder
	last := 0
	for i := 0; i < len(s); i++ {
		end := decimalAt(s, i)
		if end < 0 {
			continue
		}
		whole, frac, _ := strings.Cut(s[i:end], ".")
		b.WriteString(s[last:i])
		b.WriteString(whole + " point " + strings.Join(strings.Split(frac, ""), " "))
		last = end
		i = end - 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// ranges reads a hyphen between digits as "to": 3-2, 1990-1995.
func ranges(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '-' && i > 0 && isDigit(s[i-1]) && i+1 < len(s) && isDigit(s[i+1]) {
			b.WriteString(" to ")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// isCapitalConsonant is B–Z without the vowels A E I O U (Y counts).
func isCapitalConsonant(c byte) bool {
	return isUpper(c) && !strings.ContainsRune("AEIOU", rune(c))
}

// capitalPlurals sets an S after a digit apart (90S → 90 S), writes the
// plural or possessive s of a capital consonant as 'S so espeak-ng spells the
// letters (CDs, CD's → CD'S), and then any X'S as X's.
func capitalPlurals(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 'S' && i > 0 && isDigit(s[i-1]) {
			b.WriteByte(' ')
		}
		b.WriteByte(s[i])
	}
	s, b = b.String(), strings.Builder{}
	for i := 0; i < len(s); i++ {
		if i > 0 && isCapitalConsonant(s[i-1]) {
			j := i
			if s[j] == '\'' {
				j++
			}
			if j < len(s) && s[j] == 's' && boundary(s, j+1) {
				b.WriteString("'S")
				i = j
				continue
			}
		}
		b.WriteByte(s[i])
	}
	s, b = b.String(), strings.Builder{}
	for i := 0; i < len(s); i++ {
		if s[i] == 'S' && i >= 2 && s[i-1] == '\'' && s[i-2] == 'X' && boundary(s, i+1) {
			b.WriteByte('s')
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// dottedAcronyms turns runs of letter-period pairs into hyphenated letters.
// Two or more pairs followed by a space and a lower-case letter (e.g. "e.g.
// the") lose every period; otherwise only periods between two letters go.
func dottedAcronyms(s string) string {
	bs := []byte(s)
	for i := 0; i < len(bs); {
		j := i
		for j+1 < len(bs) && isLetter(bs[j]) && bs[j+1] == '.' {
			j += 2
		}
		if pairs := (j - i) / 2; pairs >= 2 && j+1 < len(bs) && bs[j] == ' ' && isLower(bs[j+1]) {
			for k := i + 1; k < j; k += 2 {
				bs[k] = '-'
			}
			i = j + 1
			continue
		}
		i++
	}
	for i := 1; i+1 < len(bs); i++ {
		if bs[i] == '.' && isLetter(bs[i-1]) && isLetter(bs[i+1]) {
			bs[i] = '-'
		}
	}
	return string(bs)
}
