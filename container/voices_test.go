package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"testing"
)

// `speech-container voices` prints what {"voices": true} answers on the
// running server, for espeak and for kokoro (the stand-in model), and a
// Kokoro mix synthesizes while espeak refuses one by name.
func TestVoicesCommandMatchesInvocation(t *testing.T) {
	for _, env := range []map[string]string{
		{"ENGINE": "espeak", "ENGINE_WORKERS": "1"},
		{"ENGINE": "kokoro", "MODEL_DIR": "testdata/tiny_kokoro"},
	} {
		t.Run(env["ENGINE"], func(t *testing.T) {
			cmd := exec.Command(binPath, "voices")
			cmd.Env = append(os.Environ(), "ONNXRUNTIME_LIB="+ortLib())
			for k, v := range env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			cli, err := cmd.Output()
			if err != nil {
				t.Fatalf("speech-container voices: %v", err)
			}
			p := start(t, env)
			p.waitLine(t, "STAGE ready")
			status, body, err := p.post(`{"voices":true}`)
			if err != nil || status != 200 {
				t.Fatalf("{\"voices\":true}: %d %s %v", status, body, err)
			}
			if !bytes.Equal(bytes.TrimSpace(cli), bytes.TrimSpace(body)) {
				t.Errorf("voices command:\n%s\n{\"voices\":true}:\n%s", cli, body)
			}
			var list struct {
				Voices []struct{ Name, Language, Engine string }
			}
			if err := json.Unmarshal(body, &list); err != nil || len(list.Voices) == 0 || list.Voices[0].Language == "" || list.Voices[0].Engine != env["ENGINE"] {
				t.Errorf("voice list %s: %v", body, err)
			}
			mix := `{"input":"Hello.","voice":"` + list.Voices[0].Name + `(2)+` + list.Voices[0].Name + `_x(1)"}`
			status, body, _ = p.post(mix)
			if status != 400 || !bytes.Contains(body, []byte(`"field":"voice"`)) {
				t.Errorf("%s: %d %s, want 400 naming voice", mix, status, body)
			}
		})
	}
}
