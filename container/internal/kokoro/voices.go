package kokoro

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// StyleDim is the width of a style vector.
const StyleDim = 256

// StyleRows is the number of style vectors in a voice file, one per phoneme
// count.
const StyleRows = 510

// VoiceFileSize is the size of a voices/<name>.bin file: float32
// [510][1][256], little-endian.
const VoiceFileSize = StyleRows * StyleDim * 4

// Voice is one voice's style table.
type Voice struct {
	rows []float32 // StyleRows*StyleDim
}

// Style returns the style vector for a segment of n phoneme tokens: row n,
// capped at the last row.
func (v *Voice) Style(n int) []float32 {
	n = max(0, min(n, StyleRows-1))
	return v.rows[n*StyleDim : (n+1)*StyleDim]
}

// voiceFiles returns the voices/*.bin paths under dir, relative to dir and
// sorted.
func voiceFiles(dir string) ([]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "voices", "*.bin"))
	if err != nil {
		return nil, err
	}
	for i, p := range paths {
		if paths[i], err = filepath.Rel(dir, p); err != nil {
			return nil, err
		}
	}
	sort.Strings(paths)
	return paths, nil
}

// LoadVoices reads every voices/*.bin under dir.
func LoadVoices(dir string) (map[string]*Voice, error) {
	rels, err := voiceFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(rels) == 0 {
		return nil, fmt.Errorf("no voices in %s: the model directory needs voices/<name>.bin files", filepath.Join(dir, "voices"))
	}
	out := map[string]*Voice{}
	for _, rel := range rels {
		p := filepath.Join(dir, rel)
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if len(data) != VoiceFileSize {
			return nil, fmt.Errorf("voice file %s is %d bytes; a Kokoro voice is float32 [%d][1][%d] = %d bytes", p, len(data), StyleRows, StyleDim, VoiceFileSize)
		}
		v := &Voice{rows: make([]float32, StyleRows*StyleDim)}
		for i := range v.rows {
			v.rows[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		out[strings.TrimSuffix(filepath.Base(p), ".bin")] = v
	}
	return out, nil
}

// VoiceNames lists the voices under dir (voices/<name>.bin) without loading
// them, sorted, and the default voice the engine would pick: the list
// `speech-container voices` prints without starting ONNX Runtime.
func VoiceNames(dir string) (names []string, def string, err error) {
	rels, err := voiceFiles(dir)
	if err != nil {
		return nil, "", err
	}
	if len(rels) == 0 {
		return nil, "", fmt.Errorf("no voices in %s: the model directory needs voices/<name>.bin files", filepath.Join(dir, "voices"))
	}
	for _, rel := range rels {
		names = append(names, strings.TrimSuffix(filepath.Base(rel), ".bin"))
	}
	def = names[0]
	for _, n := range names {
		if n == PreferredVoice {
			def = n
		}
	}
	return names, def, nil
}
