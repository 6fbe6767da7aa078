package kokoro

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/speech-infra/speech-infra/container/internal/clip"
)

// MaxMixParts is the most voices a mix may name.
const MaxMixParts = 4

// MaxMixWeight is the largest weight of a mix part. Weights are relative
// (af_bella(2)+af_sky(1) is the same mix as af_bella(200)+af_sky(100)), so
// the bound costs nothing; it keeps Σ wᵢ finite: af_bella(1e308)+af_sky(1e308)
// summed to +Inf and made every style value 0.
const MaxMixWeight = 1000

// MixPart is one voice of a mix and its weight.
type MixPart struct {
	Voice  string
	Weight float64
}

// ParseMix reads a voice mix in Kokoro-FastAPI's syntax, "af_bella(2)+af_sky(1)":
// voices joined by "+", each with an optional weight in parentheses (1 when
// left out). Every voice must be in known, named once, and at most
// MaxMixParts of them; each weight is a finite number above 0 and at most
// MaxMixWeight, so their sum is finite and positive. Messages quote the mix
// cut to clip.MaxRunes characters.
func ParseMix(spec string, known map[string]*Voice) ([]MixPart, error) {
	q := clip.Quote(spec)
	if n := strings.Count(spec, "+") + 1; n > MaxMixParts {
		return nil, fmt.Errorf("voice mix %s has %d parts, more than %d", q, n, MaxMixParts)
	}
	raw := strings.Split(spec, "+")
	var parts []MixPart
	seen := map[string]bool{}
	for _, p := range raw {
		p = strings.TrimSpace(p)
		name, w := p, 1.0
		if i := strings.IndexByte(p, '('); i >= 0 {
			if !strings.HasSuffix(p, ")") {
				return nil, fmt.Errorf("voice mix %s: part %s lacks its closing parenthesis: write voice(weight), e.g. af_bella(2)+af_sky(1)", q, clip.Quote(p))
			}
			name = strings.TrimSpace(p[:i])
			var err error
			text := strings.TrimSpace(p[i+1 : len(p)-1])
			w, err = strconv.ParseFloat(text, 64)
			if err != nil || math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 || w > MaxMixWeight {
				return nil, fmt.Errorf("voice mix %s: the weight of %s is %s: use a positive number up to %d (weights are relative: af_bella(2)+af_sky(1) is two thirds af_bella)",
					q, clip.Quote(name), clip.Quote(text), MaxMixWeight)
			}
		}
		if name == "" {
			return nil, fmt.Errorf("voice mix %s has an empty part: write voices joined by +, e.g. af_bella(2)+af_sky(1)", q)
		}
		if _, ok := known[name]; !ok {
			return nil, fmt.Errorf("voice mix %s: unknown voice %s", q, clip.Quote(name))
		}
		if seen[name] {
			return nil, fmt.Errorf("voice mix %s names %s twice: give it once with the summed weight", q, clip.Quote(name))
		}
		seen[name] = true
		parts = append(parts, MixPart{Voice: name, Weight: w})
	}
	var total float64
	for _, p := range parts {
		total += p.Weight
	}
	// Each weight is bounded, so this holds; Mix divides by the sum.
	if math.IsInf(total, 0) || math.IsNaN(total) || total <= 0 {
		return nil, fmt.Errorf("voice mix %s: the weights sum to %g: use positive weights up to %d", q, total, MaxMixWeight)
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
		return nil, fmt.Errorf("kokoro: unknown voice %s", clip.Quote(name))
	}
	parts, err := ParseMix(name, e.voices)
	if err != nil {
		return nil, fmt.Errorf("kokoro: %w", err)
	}
	return Mix(parts, e.voices), nil
}
