package kokoro

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/container/internal/espeak"
)

const (
	goldenDir = "../../testdata/g2p"
	// MinGoldenMatch is the share of golden sentences whose phonemes must come
	// out identical to the reference's, per voice language.
	MinGoldenMatch = 0.95
)

type goldenEntry struct {
	Text string `json:"text"`
	A    string `json:"a"`
	B    string `json:"b"`
}

// readGolden reads golden.jsonl (made by `make container-g2p-golden` from
// kokoro-js 1.2.1) and checks that it covers corpus.txt line for line, so a
// corpus edited without regenerating the golden file fails here.
func readGolden(t *testing.T) []goldenEntry {
	t.Helper()
	data, err := os.ReadFile(goldenDir + "/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []goldenEntry
	for i, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		var e goldenEntry
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&e); err != nil || e.Text == "" || e.A == "" || e.B == "" {
			t.Fatalf("golden.jsonl line %d: %v (%q)", i+1, err, line)
		}
		out = append(out, e)
	}
	corpus, err := os.ReadFile(goldenDir + "/corpus.txt")
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, l := range strings.Split(string(corpus), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			texts = append(texts, l)
		}
	}
	if len(texts) != len(out) {
		t.Fatalf("corpus.txt has %d sentences, golden.jsonl %d: run `make container-g2p-golden`", len(texts), len(out))
	}
	for i := range texts {
		if texts[i] != out[i].Text {
			t.Fatalf("corpus line %q vs golden %q: run `make container-g2p-golden`", texts[i], out[i].Text)
		}
	}
	return out
}

// readDifferences reads differences.tsv: voice letter, text, reason, one
// known difference a line.
func readDifferences(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open(goldenDir + "/differences.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]string{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		parts := strings.Split(line, "\t")
		if len(parts) != 3 || (parts[0] != "a" && parts[0] != "b") || strings.TrimSpace(parts[2]) == "" {
			t.Fatalf("differences.tsv line %d: want voice letter (a or b), text and a reason separated by tabs: %q", n, line)
		}
		out[parts[0]+"\t"+parts[1]] = parts[2]
	}
	return out
}

// TestG2PMatchesReferenceGolden runs the container's G2P (the real espeak-ng)
// over the golden corpus for an American and a British voice. At least
// MinGoldenMatch of the sentences must come out identical to kokoro-js's, and
// the sentences that differ must be exactly those listed, with a reason, in
// differences.tsv (a new difference, or a listed one that went away, fails).
func TestG2PMatchesReferenceGolden(t *testing.T) {
	espeakReady(t)
	golden := readGolden(t)
	known := readDifferences(t)
	seen, matched := map[string]bool{}, map[string]bool{}
	for _, v := range []struct{ letter, lang string }{{"a", "en-us"}, {"b", "en"}} {
		match := 0
		for _, e := range golden {
			want := e.A
			if v.letter == "b" {
				want = e.B
			}
			got, err := G2P(e.Text, v.lang, espeak.Phonemes)
			if err != nil {
				t.Fatal(err)
			}
			key := v.letter + "\t" + e.Text
			if got == want {
				match++
				matched[key] = true
				if _, ok := known[key]; ok {
					t.Errorf("%s %q now matches the reference: remove it from differences.tsv", v.letter, e.Text)
				}
				continue
			}
			seen[key] = true
			if _, ok := known[key]; !ok {
				t.Errorf("%s %q: not listed in differences.tsv\n got %s\nwant %s", v.letter, e.Text, got, want)
			}
		}
		rate := float64(match) / float64(len(golden))
		t.Logf("voice %s (%s): %d of %d sentences identical to kokoro-js 1.2.1 (%.1f%%)", v.letter, v.lang, match, len(golden), 100*rate)
		if rate < MinGoldenMatch {
			t.Errorf("voice %s: match rate %.1f%% is below %.0f%%", v.letter, 100*rate, 100*MinGoldenMatch)
		}
	}
	var stale []string
	for k := range known {
		if !seen[k] && !matched[k] {
			stale = append(stale, k)
		}
	}
	slices.Sort(stale)
	for _, k := range stale {
		t.Errorf("differences.tsv lists %q, which is not in the corpus", k)
	}
}
