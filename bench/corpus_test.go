package bench

import (
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestDefaultCorpusDeterministic(t *testing.T) {
	a, b := DefaultCorpus(), DefaultCorpus()
	if a.Len() != DefaultCorpusSize || !slices.Equal(a.Texts(), b.Texts()) {
		t.Fatalf("DefaultCorpus is not deterministic or has %d texts, want %d", a.Len(), DefaultCorpusSize)
	}
}

// TestDefaultCorpusDistribution pins the length distribution the package doc states.
func TestDefaultCorpusDistribution(t *testing.T) {
	var n []float64
	multi := 0
	for _, s := range DefaultCorpus().Texts() {
		n = append(n, float64(utf8.RuneCountInString(s)))
		if strings.Count(s, ". ") > 0 {
			multi++
		}
	}
	sort.Float64s(n)
	p50, p90, top := Percentile(n, 50), Percentile(n, 90), n[len(n)-1]
	t.Logf("characters per text: min %g p50 %g p90 %g max %g; %d of %d texts have several sentences", n[0], p50, p90, top, multi, len(n))
	if p50 < 40 || p50 > 90 || p90 < 140 || p90 > 280 || top < 300 || top > 800 {
		t.Errorf("length distribution moved (p50 %g, p90 %g, max %g): update DefaultCorpus's doc", p50, p90, top)
	}
	if multi < len(n)/3 {
		t.Errorf("only %d of %d texts have several sentences", multi, len(n))
	}
}

func TestLoadCorpus(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.txt")
	os.WriteFile(good, []byte("Hello there.\r\nSecond line, with a comma.\n"), 0o644)
	c, err := LoadCorpus(good)
	if err != nil || !slices.Equal(c.Texts(), []string{"Hello there.", "Second line, with a comma."}) {
		t.Fatalf("LoadCorpus = %v, %v", c, err)
	}
	for name, body := range map[string]string{
		"empty":   "",
		"blank":   "Hello.\n\nWorld.\n",
		"nul":     "Hello\x00world.\n",
		"symbols": "...!!!\n",
		"latin1":  "caf\xe9\n",
		"long":    strings.Repeat("a", MaxCorpusText+1) + "\n",
	} {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		if _, err := LoadCorpus(p); err == nil {
			t.Errorf("%s: LoadCorpus accepted it", name)
		} else if !strings.Contains(err.Error(), p) {
			t.Errorf("%s: error %q does not name the file", name, err)
		}
	}
	if _, err := LoadCorpus(dir); err == nil {
		t.Error("LoadCorpus accepted a directory")
	}
}
