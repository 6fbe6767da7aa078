package clip

import (
	"strings"
	"testing"
)

func TestQuote(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"af_bella", `"af_bella"`},
		{"", `""`},
		{"a\x00b", `"a\x00b"`},
		{strings.Repeat("x", 64), `"` + strings.Repeat("x", 64) + `"`},
		{strings.Repeat("x", 65), `"` + strings.Repeat("x", 64) + `…" (65 characters)`},
		{strings.Repeat("é", 70000), `"` + strings.Repeat("é", 64) + `…" (70000 characters)`},
		// Control characters are escaped: the quote stays one line, bounded by 64 escapes.
		{strings.Repeat("\x1b", 100), `"` + strings.Repeat(`\x1b`, 64) + `…" (100 characters)`},
	} {
		if got := Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%.20q…) = %.90s, want %.90s", tc.in, got, tc.want)
		}
	}
	if got := Quote(strings.Repeat("v", 65536)); len(got) > 100 {
		t.Errorf("a 64-KB input quoted in %d bytes", len(got))
	}
}
