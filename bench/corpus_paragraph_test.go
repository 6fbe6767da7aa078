package bench_test

import (
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/bench"
)

// TestParagraphCorpus checks that ParagraphCorpus(n) is every run of n consecutive built-in sentences, and
// that an n out of range is refused with the range.
func TestParagraphCorpus(t *testing.T) {
	one, err := bench.ParagraphCorpus(1)
	if err != nil {
		t.Fatal(err)
	}
	sentences := one.Texts()
	five, err := bench.ParagraphCorpus(5)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := five.Len(), len(sentences)-4; got != want {
		t.Fatalf("5-sentence corpus: %d texts, want %d", got, want)
	}
	for i, text := range five.Texts() {
		if want := strings.Join(sentences[i:i+5], " "); text != want {
			t.Fatalf("text %d = %q, want %q", i, text, want)
		}
	}
	for _, n := range []int{0, -1, len(sentences) + 1} {
		if _, err := bench.ParagraphCorpus(n); err == nil || !strings.Contains(err.Error(), "want 1 to") {
			t.Errorf("ParagraphCorpus(%d): err %v, want a refusal naming the range", n, err)
		}
	}
}
