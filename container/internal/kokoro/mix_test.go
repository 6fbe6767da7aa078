package kokoro

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/espeak"
)

// realMixVoices reads af_bella and af_sky from kokoro-js's package (as the
// voice tests do) into a voice map.
func realMixVoices(t *testing.T) (map[string]*Voice, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "voices"), 0o755)
	raw := map[string][]byte{}
	for _, name := range []string{"af_bella", "af_sky"} {
		data, err := os.ReadFile(filepath.Join(realVoicesDir, name+".bin"))
		if err != nil {
			missingTool(t, "Kokoro voice files from the kokoro-js npm package: %v: run `make deps` (npm ci) at the repository root", err)
		}
		raw[name] = data
		if err := os.WriteFile(filepath.Join(dir, "voices", name+".bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	voices, err := LoadVoices(dir)
	if err != nil {
		t.Fatal(err)
	}
	return voices, raw
}

// af_bella(2)+af_sky(1) is (2·bella + sky) / 3 in every row, checked
// against the files' own bytes; weights default to 1; the mix differs from
// both voices.
func TestMixWeightedStyleOfRealVoices(t *testing.T) {
	voices, raw := realMixVoices(t)
	parts, err := ParseMix("af_bella(2)+af_sky(1)", voices)
	if err != nil {
		t.Fatal(err)
	}
	mixed := Mix(parts, voices)
	equal := Mix([]MixPart{{"af_bella", 1}, {"af_sky", 1}}, voices)
	plain, err := ParseMix("af_bella+af_sky", voices)
	if err != nil {
		t.Fatal(err)
	}
	plainMix := Mix(plain, voices)
	differs := 0
	for _, row := range []int{0, 1, 17, 100, 509} {
		b, s := rawRow(raw["af_bella"], row), rawRow(raw["af_sky"], row)
		got := mixed.Style(row)
		for j := range StyleDim {
			want := (2*float64(b[j]) + float64(s[j])) / 3
			if math.Abs(float64(got[j])-want) > 1e-6 {
				t.Fatalf("row %d dim %d: mix %v, want (2·%v + %v)/3 = %v", row, j, got[j], b[j], s[j], want)
			}
			if e := (float64(b[j]) + float64(s[j])) / 2; math.Abs(float64(plainMix.Style(row)[j])-e) > 1e-6 || equal.Style(row)[j] != plainMix.Style(row)[j] {
				t.Fatalf("row %d dim %d: af_bella+af_sky is not the plain mean", row, j)
			}
			if got[j] != b[j] && got[j] != s[j] {
				differs++
			}
		}
	}
	if differs == 0 {
		t.Error("the mix equals one of its voices everywhere")
	}
}

func TestParseMixRefusals(t *testing.T) {
	voices, _ := realMixVoices(t)
	for spec, want := range map[string]string{
		"af_bella(2)+af_nobody(1)":               `unknown voice "af_nobody"`,
		"af_bella(0)+af_sky(1)":                  "positive",
		"af_bella(-1)+af_sky(1)":                 "positive",
		"af_bella(NaN)+af_sky":                   "positive",
		"af_bella(x)+af_sky":                     "positive",
		"af_bella(2+af_sky(1)":                   "parenthesis",
		"af_bella++af_sky":                       "empty part",
		"af_bella+af_sky+af_bella":               "twice",
		"af_bella+af_sky+af_bella+af_sky+af_sky": "more than 4",
	} {
		_, err := ParseMix(spec, voices)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseMix(%q) = %v, want an error mentioning %q", spec, err, want)
		}
	}
}

// The engine speaks a mix with the mixed style: on the stand-in model the
// first token's loudness follows mean(style row n), so the audio of
// "af_heart(2)+am_adam(1)" fits the mixed row and not either voice's.
func TestEngineSpeaksAMix(t *testing.T) {
	dir := realVoiceDir(t)
	espeakReady(t)
	e, err := Load(Config{ModelDir: dir, LibPath: ortLib(t), Provider: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	const text, mix = "Hello there, friend.", "af_heart(2)+am_adam(1)"
	if err := e.CheckVoice(mix); err != nil {
		t.Fatal(err)
	}
	if err := e.CheckVoice("af_heart(2)+nobody(1)"); err == nil || !strings.Contains(err.Error(), "nobody") {
		t.Errorf("CheckVoice of an unknown part: %v", err)
	}
	ps, err := G2P(text, LangForVoice(mix), espeak.Phonemes)
	if err != nil {
		t.Fatal(err)
	}
	n := len(e.Tokenizer().Encode(ps))
	var pcm []int16
	if err := e.Synthesize(context.Background(), engine.Segment{Text: text, Voice: mix, Speed: 1}, func(s []int16) error {
		pcm = append(pcm, s...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	misfit := func(style []float32) float64 {
		var sum float64
		for _, x := range style {
			sum += float64(x)
		}
		amp := 0.1 + 0.3/(1+math.Exp(-sum/StyleDim))
		worst := 0.0
		for k := 0; k < 240; k++ {
			want := amp * math.Sin(2*math.Pi*110*float64(k)/24000) * math.MaxInt16
			worst = max(worst, math.Abs(float64(pcm[k])-want))
		}
		return worst
	}
	mixed := Mix([]MixPart{{"af_heart", 2}, {"am_adam", 1}}, e.voices)
	if m := misfit(mixed.Style(n)); m > 2 {
		t.Errorf("the mix's audio does not fit the mixed style row %d (off by %.1f)", n, m)
	}
	if misfit(e.voices["af_heart"].Style(n)) <= 2 && misfit(e.voices["am_adam"].Style(n)) <= 2 {
		t.Errorf("the check cannot tell the mix from its voices")
	}
}

// constVoice is a voice whose every style value is x.
func constVoice(x float32) *Voice {
	v := &Voice{rows: make([]float32, StyleRows*StyleDim)}
	for i := range v.rows {
		v.rows[i] = x
	}
	return v
}

// Weights are bounded to (0, MaxMixWeight], so their sum is finite and
// positive: af_bella(1e308)+af_sky(1e308) summed to +Inf and made every
// style value 0. Weights at the bound and far below 1 still mix as they
// should; a refusal names the weight and the range, and quotes a long mix
// cut short.
func TestParseMixBoundsWeights(t *testing.T) {
	voices := map[string]*Voice{"af_bella": constVoice(1), "af_sky": constVoice(3)}
	for _, spec := range []string{"af_bella(1e308)+af_sky(1e308)", "af_bella(1e308)", "af_bella(1001)+af_sky", "af_bella(Inf)+af_sky", "af_bella(0x1p1024)"} {
		_, err := ParseMix(spec, voices)
		if err == nil || !strings.Contains(err.Error(), "up to 1000") || !strings.Contains(err.Error(), `the weight of "af_bella"`) {
			t.Errorf("ParseMix(%q) = %v, want the weight refused with its range", spec, err)
		}
	}
	for spec, want := range map[string]float32{
		"af_bella(1000)+af_sky(1000)":     2,
		"af_bella(1e-300)+af_sky(1e-300)": 2,
		"af_bella(5e-324)+af_sky(5e-324)": 2, // the smallest positive float64: its sum is still positive
		"af_bella(3)+af_sky(1)":           1.5,
	} {
		parts, err := ParseMix(spec, voices)
		if err != nil {
			t.Errorf("ParseMix(%q): %v", spec, err)
			continue
		}
		if got := Mix(parts, voices).Style(5)[7]; math.Abs(float64(got-want)) > 1e-6 {
			t.Errorf("Mix(%q) style value %v, want %v", spec, got, want)
		}
	}
	long := "af_bella(1)+" + strings.Repeat("x", 65536)
	_, err := ParseMix(long, voices)
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "(65548 characters)") {
		t.Errorf("a 64-KB mix: %d-byte error %.200q, want it cut and its length given", len(err.Error()), err)
	}
	many := strings.Repeat("af_bella+", 100000)
	if _, err := ParseMix(many, voices); err == nil || len(err.Error()) > 400 {
		t.Errorf("a mix of 100,000 parts: %.200v", err)
	}
}
