package models

import (
	"os"
	"strings"
	"testing"
)

// TestSourceTokenSecretAndPatterns: token_secret is optional (a public repository needs no token), but when
// given it must be a Secrets Manager name; source.files must be valid path.Match patterns.
func TestSourceTokenSecretAndPatterns(t *testing.T) {
	base, err := os.ReadFile("kokoro-82m.json")
	if err != nil {
		t.Fatal(err)
	}
	withSource := func(extra string) []byte {
		return []byte(strings.Replace(string(base), `"files": [`, extra+`"files": [`, 1))
	}
	m, probs := Parse("kokoro-82m.json", base)
	if len(probs) > 0 || m.Source.TokenSecret != "" {
		t.Fatalf("the public kokoro repository: %v, token_secret %q: want valid with no secret", probs, m.Source.TokenSecret)
	}
	m, probs = Parse("kokoro-82m.json", withSource(`"token_secret": "speech-infra/hf-token", `))
	if len(probs) > 0 || m.Source.TokenSecret != "speech-infra/hf-token" {
		t.Fatalf("a gated repository's secret: %v, %q", probs, m.Source.TokenSecret)
	}
	_, probs = Parse("kokoro-82m.json", withSource(`"token_secret": "hf token!", `))
	if len(probs) != 1 || !strings.Contains(probs[0], "source.token_secret") || !strings.Contains(probs[0], "not a Secrets Manager secret name") {
		t.Fatalf("bad secret name: %v", probs)
	}
	_, probs = Parse("kokoro-82m.json", []byte(strings.Replace(string(base), `"voices/*.bin"`, `"voices/[.bin"`, 1)))
	if len(probs) != 1 || !strings.Contains(probs[0], "source.files[3]") || !strings.Contains(probs[0], "not a valid pattern") {
		t.Fatalf("malformed pattern: %v", probs)
	}
}
