package kokoro

import (
	"encoding/json"
	"fmt"
	"os"
	"unicode/utf8"
)

// PadID is the token id Kokoro puts at both ends of input_ids ("$").
const PadID = 0

// MaxPhonemes is the most phoneme tokens one model call takes (the model's
// context is 512 with the two pads).
const MaxPhonemes = 510

// Tokenizer maps phoneme characters to Kokoro token ids.
type Tokenizer struct {
	vocab  map[rune]int64
	breaks map[int64]bool // ids of the punctuation and space Chunk cuts after
}

// LoadTokenizer reads the vocabulary (model.vocab: phoneme char -> id) from a
// tokenizer.json in the Kokoro ONNX export's layout.
func LoadTokenizer(path string) (*Tokenizer, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read tokenizer: %w", err)
	}
	var doc struct {
		Model struct {
			Vocab map[string]int64 `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parse %s: %w", path, err)
	}
	if len(doc.Model.Vocab) == 0 {
		return nil, fmt.Errorf("%s: model.vocab is empty: it must map each phoneme character to its id", path)
	}
	t := &Tokenizer{vocab: make(map[rune]int64, len(doc.Model.Vocab)), breaks: map[int64]bool{}}
	for k, id := range doc.Model.Vocab {
		r, size := utf8.DecodeRuneInString(k)
		if size != len(k) || r == utf8.RuneError {
			return nil, fmt.Errorf("%s: model.vocab key %q is not a single character", path, k)
		}
		t.vocab[r] = id
	}
	for _, r := range " ;:,.!?—…" {
		if id, ok := t.vocab[r]; ok {
			t.breaks[id] = true
		}
	}
	return t, nil
}

// Encode returns the ids of ps's characters, dropping characters the
// vocabulary lacks (as the export's normalizer does), without the pads.
func (t *Tokenizer) Encode(ps string) []int64 {
	ids := make([]int64, 0, len(ps))
	for _, r := range ps {
		if id, ok := t.vocab[r]; ok && id != PadID {
			ids = append(ids, id)
		}
	}
	return ids
}

// ID returns the id of phoneme character r.
func (t *Tokenizer) ID(r rune) (int64, bool) {
	id, ok := t.vocab[r]
	return id, ok
}

// Chunk splits ids into pieces of at most max tokens, cutting after the last
// punctuation or space token when a piece is too long.
func (t *Tokenizer) Chunk(ids []int64, max int) [][]int64 {
	var out [][]int64
	for len(ids) > max {
		cut := max
		for i := max; i > max/2; i-- {
			if t.breaks[ids[i-1]] {
				cut = i
				break
			}
		}
		out = append(out, ids[:cut])
		ids = ids[cut:]
	}
	if len(ids) > 0 {
		out = append(out, ids)
	}
	return out
}
