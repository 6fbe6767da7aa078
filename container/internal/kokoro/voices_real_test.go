package kokoro

import (
	"context"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/espeak"
)

// realVoicesDir is where `make deps` (npm ci) puts the kokoro-js package,
// which ships Kokoro's own voice files. They are not committed here.
const realVoicesDir = "../../../node_modules/kokoro-js/voices"

// realVoiceNames are the voices the tests load: American and British,
// female and male.
var realVoiceNames = []string{"af_heart", "am_adam", "bf_emma", "bm_george"}

// realVoiceDir returns a model directory whose voices/ holds copies of a few
// real Kokoro voice files, and beside them the stand-in model and tokenizer.
// Without kokoro-js installed it fails under CI=true and skips elsewhere.
func realVoiceDir(t *testing.T) string {
	t.Helper()
	for _, name := range realVoiceNames {
		if _, err := os.Stat(filepath.Join(realVoicesDir, name+".bin")); err != nil {
			missingTool(t, "Kokoro voice files from the kokoro-js npm package: %v: run `make deps` (npm ci) at the repository root", err)
		}
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "voices"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range realVoiceNames {
		data, err := os.ReadFile(filepath.Join(realVoicesDir, name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "voices", name+".bin"), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, rel := range []string{"config.json", TokenizerFile, "onnx"} {
		abs, err := filepath.Abs(filepath.Join(tinyDir, rel))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(abs, filepath.Join(dir, rel)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// rawRow reads row n of a voice file's bytes as float32s.
func rawRow(data []byte, n int) []float32 {
	out := make([]float32, StyleDim)
	for j := range out {
		out[j] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*(n*StyleDim+j):]))
	}
	return out
}

// The loader on Kokoro's real voices: every row as in the file, real data
// (finite, not constant, voices different from each other), the row capped at
// the last for long segments; a real file cut short is refused by name.
func TestRealVoicesLoad(t *testing.T) {
	dir := realVoiceDir(t)
	voices, err := LoadVoices(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(voices) != len(realVoiceNames) {
		t.Fatalf("loaded %d voices, want %d", len(voices), len(realVoiceNames))
	}
	first := map[string]float32{}
	for _, name := range realVoiceNames {
		data, err := os.ReadFile(filepath.Join(dir, "voices", name+".bin"))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) != VoiceFileSize || VoiceFileSize != 522240 {
			t.Fatalf("%s: %d bytes, VoiceFileSize %d, want 522240", name, len(data), VoiceFileSize)
		}
		v := voices[name]
		if v == nil {
			t.Fatalf("voice %s not loaded", name)
		}
		var lo, hi float32 = math.MaxFloat32, -math.MaxFloat32
		for n := 0; n < StyleRows; n++ {
			want, got := rawRow(data, n), v.Style(n)
			for j := range want {
				if got[j] != want[j] {
					t.Fatalf("%s row %d [%d] = %v, file has %v", name, n, j, got[j], want[j])
				}
				if math.IsNaN(float64(got[j])) || math.IsInf(float64(got[j]), 0) {
					t.Fatalf("%s row %d [%d] = %v", name, n, j, got[j])
				}
				lo, hi = min(lo, got[j]), max(hi, got[j])
			}
		}
		if hi-lo < 0.1 {
			t.Errorf("%s: values span only [%v, %v]: not a real style table", name, lo, hi)
		}
		if got := v.Style(StyleRows + 100); &got[0] != &v.Style(StyleRows - 1)[0] {
			t.Errorf("%s: Style past the last row is not the last row", name)
		}
		first[name] = v.Style(20)[0]
	}
	if first["af_heart"] == first["am_adam"] && first["af_heart"] == first["bf_emma"] {
		t.Errorf("different voices have the same style: %v", first)
	}

	// A real voice file cut short by one float is refused, naming the file.
	data, _ := os.ReadFile(filepath.Join(dir, "voices", "bf_emma.bin"))
	cut := t.TempDir()
	os.MkdirAll(filepath.Join(cut, "voices"), 0o755)
	os.WriteFile(filepath.Join(cut, "voices", "bf_emma.bin"), data[:len(data)-4], 0o644)
	if _, err := LoadVoices(cut); err == nil || !strings.Contains(err.Error(), "bf_emma.bin") || !strings.Contains(err.Error(), "522236 bytes") {
		t.Errorf("truncated real voice: err = %v", err)
	}
}

// The engine speaks with the style row of the segment's phoneme count, on a
// real voice: the stand-in model's loudness is 0.1 + 0.3·sigmoid(mean(style)),
// so the first token's samples (the pad, a 110 Hz tone) identify the row.
func TestEngineUsesStyleRowOfPhonemeCountOnRealVoice(t *testing.T) {
	dir := realVoiceDir(t)
	espeakReady(t)
	e, err := Load(Config{ModelDir: dir, LibPath: ortLib(t), Provider: "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for _, c := range []struct{ voice, text string }{
		{"af_heart", "Your balance is $1,234.56."},
		{"bm_george", "Mr. Johnson met Dr. Patel at 9:15."},
	} {
		ps, err := G2P(c.text, LangForVoice(c.voice), espeak.Phonemes)
		if err != nil {
			t.Fatal(err)
		}
		n := len(e.Tokenizer().Encode(ps))
		var pcm []int16
		err = e.Synthesize(context.Background(), engine.Segment{Text: c.text, Voice: c.voice, Speed: 1}, func(s []int16) error {
			pcm = append(pcm, s...)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(pcm) != (n+2)*240 {
			t.Fatalf("%s: %d samples for %d tokens", c.voice, len(pcm), n)
		}
		// expected first-token samples for row r
		misfit := func(r int) float64 {
			var sum float64
			for _, x := range e.voices[c.voice].Style(r) {
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
		if m := misfit(n); m > 2 {
			t.Errorf("%s %q: %d tokens, but the audio does not fit style row %d (off by %.1f)", c.voice, c.text, n, n, m)
		}
		// The check tells rows apart: most other rows would not fit.
		fits := 0
		for r := 0; r < StyleRows; r++ {
			if misfit(r) <= 2 {
				fits++
			}
		}
		if fits > StyleRows/4 {
			t.Errorf("%s: %d of %d rows fit the audio: the check cannot tell rows apart", c.voice, fits, StyleRows)
		}
		t.Logf("%s %q: %d tokens, style row %d (%d rows of %d fit)", c.voice, c.text, n, n, fits, StyleRows)
	}
}
