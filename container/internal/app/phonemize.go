package app

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/speech-infra/speech-infra/container/internal/espeak"
	"github.com/speech-infra/speech-infra/container/internal/kokoro"
)

// PhonemizeUsage is the summary of the phonemize subcommand.
const PhonemizeUsage = `usage: speech-container phonemize [--voice NAME] < lines

Prints, for each line of text on standard input, one JSON line
{"text":...,"phonemes":...}: the phonemes the kokoro engine would speak for it
(the same normalization and G2P). --voice (default af_heart) chooses the
language by its first letter: a American English, b British English, e
Spanish, f French, h Hindi, i Italian, p Brazilian Portuguese. When MODEL_DIR
holds a tokenizer.json, each line also has "tokens": the number of model
tokens the phonemes encode to.`

// DefaultPhonemizeVoice is the voice phonemize uses when --voice is not given.
const DefaultPhonemizeVoice = "af_heart"

// phonemizeLine is one output line.
type phonemizeLine struct {
	Text     string `json:"text"`
	Phonemes string `json:"phonemes"`
	Tokens   *int   `json:"tokens,omitempty"`
}

// Phonemize runs `speech-container phonemize` (args without the subcommand
// name): one line of stdin in, one JSON line out. espeak-ng is not
// thread-safe, so lines are phonemized one at a time, in order.
func Phonemize(args []string, stdin io.Reader, stdout io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("phonemize", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	voice := fs.String("voice", DefaultPhonemizeVoice, "Kokoro voice name; its first letter is the language")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			//lint:ignore ST1005 the error is the usage text, printed as it is
			return &UsageError{Err: errors.New(PhonemizeUsage)}
		}
		return &UsageError{Err: fmt.Errorf("%v\n%s", err, PhonemizeUsage)}
	}
	if fs.NArg() > 0 {
		return &UsageError{Err: fmt.Errorf("phonemize takes no arguments (got %q): the text comes on standard input\n%s", fs.Args(), PhonemizeUsage)}
	}
	if *voice == "" || !strings.ContainsRune("abefhip", rune((*voice)[0])) {
		return &UsageError{Err: fmt.Errorf("--voice %q: a Kokoro voice name starts with its language letter, one of a b e f h i p (for example af_heart, bf_emma)", *voice)}
	}
	lang := kokoro.LangForVoice(*voice)

	var tok *kokoro.Tokenizer
	if dir := getenv("MODEL_DIR"); dir != "" {
		path := filepath.Join(dir, "tokenizer.json")
		if _, err := os.Stat(path); err == nil {
			if tok, err = kokoro.LoadTokenizer(path); err != nil {
				return &UsageError{Err: fmt.Errorf("MODEL_DIR: %w", err)}
			}
		} else if !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("MODEL_DIR: %w", err)
		}
	}

	in := bufio.NewScanner(stdin)
	in.Buffer(make([]byte, 0, 64*1024), 16<<20)
	bw := bufio.NewWriter(stdout)
	enc := json.NewEncoder(bw)
	enc.SetEscapeHTML(false)
	for n := 1; in.Scan(); n++ {
		text := strings.TrimSuffix(in.Text(), "\r")
		ps, err := kokoro.G2P(text, lang, espeak.Phonemes)
		if err != nil {
			return fmt.Errorf("line %d: %w", n, err)
		}
		line := phonemizeLine{Text: text, Phonemes: ps}
		if tok != nil {
			count := len(tok.Encode(ps))
			line.Tokens = &count
		}
		if err := enc.Encode(line); err != nil {
			return err
		}
		// One line out per line in, as it is read: usable interactively.
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	if err := in.Err(); err != nil {
		return fmt.Errorf("read standard input: %w", err)
	}
	return bw.Flush()
}
