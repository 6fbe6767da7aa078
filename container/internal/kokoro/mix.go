package kokoro

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// MaxMixParts is the most voices a mix may name.
const MaxMixParts = 4

// MixPart is one voice of a mix and its weight.
type MixPart struct {
	Voice  string
	Weight float64
}

// ParseMix reads a voice mix in Kokoro-FastAPI's syntax, "af_bella(2)+af_sky(1)":
// voices joined by "+", each with an optional positive weight in
// parentheses (1 when left out). Every voice must be in known, named once,
// and at most MaxMixParts of them; the weights are positive finite numbers.
func ParseMix(spec string, known map[string]*Voice) ([]MixPart, error) {
	raw := strings.Split(spec, "+")
	if len(raw) > MaxMixParts {
		return nil, fmt.Errorf("voice mix %q has %d parts, more than %d", spec, len(raw), MaxMixParts)
	}
	var parts []MixPart
	seen := map[string]bool{}
	for _, p := range raw {
		p = strings.TrimSpace(p)
		name, w := p, 1.0
		if i := strings.IndexByte(p, '('); i >= 0 {
			if !strings.HasSuffix(p, ")") {
				return nil, fmt.Errorf("voice mix %q: part %q lacks its closing parenthesis: write voice(weight), e.g. af_bella(2)+af_sky(1)", spec, p)
			}
			name = strings.TrimSpace(p[:i])
			var err error
			w, err = strconv.ParseFloat(strings.TrimSpace(p[i+1:len(p)-1]), 64)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 {
				return nil, fmt.Errorf("voice mix %q: the weight of %q must be a positive number", spec, name)
			}
		}
		if name == "" {
			return nil, fmt.Errorf("voice mix %q has an empty part: write voices joined by +, e.g. af_bella(2)+af_sky(1)", spec)
		}
		if _, ok := known[name]; !ok {
			return nil, fmt.Errorf("voice mix %q: unknown voice %q", spec, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("voice mix %q names %q twice: give it once with the summed weight", spec, name)
		}
		seen[name] = true
		parts = append(parts, MixPart{Voice: name, Weight: w})
	}
	return parts, nil
}

// Mix returns the weighted mean of the parts' style tables: row by row,
// Σ wᵢ·vᵢ / Σ wᵢ, as Kokoro-FastAPI combines voices.
func Mix(parts []MixPart, known map[string]*Voice) *Voice {
	var total float64
	for _, p := range parts {
		total += p.Weight
	}
	acc := make([]float64, StyleRows*StyleDim)
	for _, p := range parts {
		w := p.Weight / total
		for i, x := range known[p.Voice].rows {
			acc[i] += w * float64(x)
		}
	}
	v := &Voice{rows: make([]float32, len(acc))}
	for i, x := range acc {
		v.rows[i] = float32(x)
	}
	return v
}

// isMix reports whether a voice name is a mix rather than one voice.
func isMix(name string) bool { return strings.ContainsAny(name, "+(") }

// CheckVoice implements engine.VoiceMixer: a known voice, or a valid mix of
// known voices.
func (e *Engine) CheckVoice(name string) error {
	if _, ok := e.voices[name]; ok {
		return nil
	}
	_, err := ParseMix(name, e.voices)
	return err
}

// VoiceLanguage implements engine.VoiceLanguager: the language the voice's
// first letter selects (a mix speaks its first voice's language).
func (e *Engine) VoiceLanguage(name string) string { return LangForVoice(name) }

// voice returns the style table for a voice name or mix.
func (e *Engine) voice(name string) (*Voice, error) {
	if v, ok := e.voices[name]; ok {
		return v, nil
	}
	if !isMix(name) {
		return nil, fmt.Errorf("kokoro: unknown voice %q", name)
	}
	parts, err := ParseMix(name, e.voices)
	if err != nil {
		return nil, fmt.Errorf("kokoro: %w", err)
	}
	return Mix(parts, e.voices), nil
}
