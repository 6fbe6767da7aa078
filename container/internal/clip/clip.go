// Package clip bounds the user input that error messages and logs quote: a
// request may carry up to MAX_BODY_BYTES, and copying a 64-KB voice name into
// every error body and log line would let one request multiply its own size
// in the logs.
package clip

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// MaxRunes is how many characters of user input a message quotes at most.
const MaxRunes = 64

// Quote returns s quoted as %q quotes it. Longer than MaxRunes characters,
// it quotes the first MaxRunes followed by an ellipsis and gives the
// original length: "af_bellaaaa…" (65536 characters).
func Quote(s string) string {
	n := utf8.RuneCountInString(s)
	if n <= MaxRunes {
		return strconv.Quote(s)
	}
	cut := 0
	for range MaxRunes {
		_, size := utf8.DecodeRuneInString(s[cut:])
		cut += size
	}
	return fmt.Sprintf("%s (%d characters)", strconv.Quote(s[:cut]+"…"), n)
}
