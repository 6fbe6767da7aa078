package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runPhonemize runs the built binary's phonemize subcommand with stdin and
// the environment env (added to a minimal one) and returns stdout, stderr and
// the exit code.
func runPhonemize(t *testing.T, stdin string, env map[string]string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(binPath, append([]string{"phonemize"}, args...)...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

type phonemizeOut struct {
	Text     string `json:"text"`
	Phonemes string `json:"phonemes"`
	Tokens   *int   `json:"tokens"`
}

func decodeLines(t *testing.T, out string) []phonemizeOut {
	t.Helper()
	var res []phonemizeOut
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		var p phonemizeOut
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("output line %q: %v", line, err)
		}
		res = append(res, p)
	}
	return res
}

// golden returns the reference (kokoro-js 1.2.1) phonemes of a corpus
// sentence for voice letter a or b, from the committed golden file.
func golden(t *testing.T, text, letter string) string {
	t.Helper()
	data, err := os.ReadFile("testdata/g2p/golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		var e map[string]string
		if json.Unmarshal([]byte(line), &e) == nil && e["text"] == text {
			return e[letter]
		}
	}
	t.Fatalf("%q is not in testdata/g2p/golden.jsonl", text)
	return ""
}

// Money with a thousands separator and cents reads
// as the reference reads it, on the built binary, with an American default.
func TestPhonemizeBalanceOnTheBinary(t *testing.T) {
	const text = "Your balance is $1,234.56."
	out, errText, code := runPhonemize(t, text+"\n", nil)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errText)
	}
	lines := decodeLines(t, out)
	if len(lines) != 1 || lines[0].Text != text || lines[0].Tokens != nil {
		t.Fatalf("output = %q", out)
	}
	ps := lines[0].Phonemes
	if want := golden(t, text, "a"); ps != want {
		t.Errorf("phonemes = %s\nreference %s", ps, want)
	}
	// one thousand two hundred thirty four dollars and fifty six cents
	for _, word := range []string{"wˈʌn θˈaʊzənd", "tˈuː hˈʌndɹɪd", "θˈɜːɾi fˈoːɹ", "dˈɑːlɚz", "ænd", "fˈɪfti sˈɪks", "sˈɛnts."} {
		if !strings.Contains(ps, word) {
			t.Errorf("phonemes %s lack %s", ps, word)
		}
	}
	if strings.Contains(out, `\u`) {
		t.Errorf("IPA is escaped in the JSON: %s", out)
	}
}

// One JSON line per input line, in order, in the British voice's language;
// with MODEL_DIR holding a tokenizer.json, the token count of each line.
func TestPhonemizeBritishWithTokenCount(t *testing.T) {
	texts := []string{"Mr. Johnson met Dr. Patel.", "The jacket costs £45.", "The 1990s were a decade of change."}
	dir := "testdata/tiny_kokoro"
	out, errText, code := runPhonemize(t, strings.Join(texts, "\r\n")+"\n", map[string]string{"MODEL_DIR": dir}, "--voice", "bf_emma")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errText)
	}
	var tok struct {
		Model struct {
			Vocab map[string]int `json:"vocab"`
		} `json:"model"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &tok); err != nil {
		t.Fatal(err)
	}
	lines := decodeLines(t, out)
	if len(lines) != len(texts) {
		t.Fatalf("%d lines in, %d out: %q", len(texts), len(lines), out)
	}
	for i, l := range lines {
		if l.Text != texts[i] {
			t.Errorf("line %d: text %q, want %q", i, l.Text, texts[i])
		}
		if want := golden(t, texts[i], "b"); l.Phonemes != want {
			t.Errorf("line %d: phonemes %s, reference (British) %s", i, l.Phonemes, want)
		}
		n := 0
		for _, r := range l.Phonemes {
			if _, ok := tok.Model.Vocab[string(r)]; ok {
				n++
			}
		}
		if l.Tokens == nil || *l.Tokens != n || n == 0 {
			t.Errorf("line %d: tokens = %v, want %d", i, l.Tokens, n)
		}
	}
}

func TestPhonemizeUsageErrorsExitTwo(t *testing.T) {
	bad := t.TempDir()
	os.WriteFile(filepath.Join(bad, "tokenizer.json"), []byte(`{"model":{"vocab":{}}}`), 0o644)
	for _, c := range []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"unknown voice language", nil, []string{"--voice", "zf_xiaobei"}, "--voice"},
		{"empty voice", nil, []string{"--voice", ""}, "--voice"},
		{"unknown flag", nil, []string{"--lang", "en"}, "-lang"},
		{"an argument", nil, []string{"hello"}, "standard input"},
		{"bad tokenizer", map[string]string{"MODEL_DIR": bad}, nil, "model.vocab is empty"},
	} {
		out, errText, code := runPhonemize(t, "hello\n", c.env, c.args...)
		if code != 2 || out != "" || !strings.Contains(errText, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q (want exit 2 naming %q)", c.name, code, out, errText, c.want)
		}
	}
	// No input, no output: a clean exit.
	if out, errText, code := runPhonemize(t, "", nil); code != 0 || out != "" {
		t.Errorf("empty stdin: exit %d, stdout %q, stderr %q", code, out, errText)
	}
}
