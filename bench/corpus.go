package bench

import (
	"bufio"
	_ "embed"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Corpus is the set of request texts a run draws from.
type Corpus struct {
	texts []string
}

// Len is the number of texts.
func (c *Corpus) Len() int { return len(c.texts) }

// Texts returns a copy of the texts.
func (c *Corpus) Texts() []string { return append([]string(nil), c.texts...) }

// Pick returns a text chosen by rng.
func (c *Corpus) Pick(rng *rand.Rand) string { return c.texts[rng.IntN(len(c.texts))] }

// MaxCorpusText bounds one corpus text in characters: the container's default MAX_TEXT_CHARS.
const MaxCorpusText = 5000

// MaxCorpusFile bounds a corpus file.
const MaxCorpusFile = 64 << 20

// NewCorpus validates texts: each non-empty, valid UTF-8, at most MaxCorpusText characters, with a letter or
// digit and no control characters (the container refuses such text with 400, which would count as errors).
func NewCorpus(source string, texts []string) (*Corpus, error) {
	var problems []string
	for i, t := range texts {
		if p := textProblem(t); p != "" {
			problems = append(problems, fmt.Sprintf("%s: line %d: %s", source, i+1, p))
			if len(problems) == 10 {
				problems = append(problems, "... (first 10 problems shown)")
				break
			}
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid corpus:\n  %s", strings.Join(problems, "\n  "))
	}
	if len(texts) == 0 {
		return nil, fmt.Errorf("%s: the corpus has no texts: give one request text per line", source)
	}
	return &Corpus{texts: append([]string(nil), texts...)}, nil
}

func textProblem(t string) string {
	if !utf8.ValidString(t) {
		return "not valid UTF-8: save the file as UTF-8"
	}
	if strings.TrimSpace(t) == "" {
		return "is empty: remove blank lines"
	}
	if n := utf8.RuneCountInString(t); n > MaxCorpusText {
		return fmt.Sprintf("has %d characters: at most %d (the container's MAX_TEXT_CHARS): split it", n, MaxCorpusText)
	}
	hasWord := false
	for _, r := range t {
		if unicode.IsControl(r) && r != '\t' || r == utf8.RuneError {
			return fmt.Sprintf("contains the control character %U: the container refuses it: remove it", r)
		}
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			hasWord = true
		}
	}
	if !hasWord {
		return "has no letter or digit: the container refuses it: remove the line"
	}
	return ""
}

// LoadCorpus reads a corpus file: one request text per line (UTF-8; a trailing carriage return is dropped).
func LoadCorpus(path string) (*Corpus, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open the corpus: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return nil, fmt.Errorf("open the corpus: %w", err)
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("corpus %s: is not a regular file: give a text file with one request per line", path)
	} else if st.Size() > MaxCorpusFile {
		return nil, fmt.Errorf("corpus %s: is %d bytes: at most %d", path, st.Size(), MaxCorpusFile)
	}
	return ReadCorpus(path, f)
}

// ReadCorpus reads a corpus from r (as LoadCorpus); source names it in errors.
func ReadCorpus(source string, r io.Reader) (*Corpus, error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxCorpusFile))
	sc.Buffer(make([]byte, 0, 64<<10), 4*MaxCorpusText+16)
	var texts []string
	for sc.Scan() {
		texts = append(texts, strings.TrimSuffix(sc.Text(), "\r"))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read the corpus %s: %w: one request text per line, each at most %d characters", source, err, MaxCorpusText)
	}
	return NewCorpus(source, texts)
}

// sentences is the built-in sentence list: realistic English of the kinds a TTS endpoint serves (prompts,
// notices, directions, news, instructions, narrative and dialogue), in runs that read on as paragraphs.
//
//go:embed sentences.txt
var sentences string

// builtinSentences is the embedded sentence list, one sentence an element.
func builtinSentences() []string {
	var list []string
	for _, l := range strings.Split(strings.TrimSpace(sentences), "\n") {
		list = append(list, strings.TrimSpace(l))
	}
	return list
}

// ParagraphCorpus is the built-in sentence list as texts of n consecutive sentences each, one text starting at
// every sentence that has n-1 after it: every text is split by the container into about n segments, so a
// scheduler has continuations to order (the scheduler measurements' five-sentence texts are ParagraphCorpus(5)).
// n must be 1 to the list's length.
func ParagraphCorpus(n int) (*Corpus, error) {
	list := builtinSentences()
	if n < 1 || n > len(list) {
		return nil, fmt.Errorf("paragraph corpus: %d sentences a text: want 1 to %d (the built-in list's length)", n, len(list))
	}
	texts := make([]string, 0, len(list)-n+1)
	for i := 0; i+n <= len(list); i++ {
		texts = append(texts, strings.Join(list[i:i+n], " "))
	}
	return NewCorpus(fmt.Sprintf("the built-in %d-sentence corpus", n), texts)
}

// DefaultCorpusSize is the number of texts DefaultCorpus builds.
const DefaultCorpusSize = 400

// DefaultCorpusSeed is the seed of DefaultCorpus.
const DefaultCorpusSeed = 11

// DefaultCorpus is the built-in corpus: DefaultCorpusSize request texts, each a run of consecutive sentences
// of the embedded list (so multi-sentence texts read on, and the container splits them into several
// segments), drawn with a fixed seed, so every run sends the same texts. Run lengths: 1 sentence 50%, 2
// sentences 30%, 3-4 sentences 15%, 5-8 sentences 5%. The resulting length distribution (characters per
// text, checked by TestDefaultCorpusDistribution): median about 80, p90 about 220, max about 560: short
// prompts dominate, as on a voice front end, with paragraphs in the tail, as in narration.
func DefaultCorpus() *Corpus {
	list := builtinSentences()
	rng := rand.New(rand.NewPCG(DefaultCorpusSeed, 0))
	texts := make([]string, 0, DefaultCorpusSize)
	for len(texts) < DefaultCorpusSize {
		var n int
		switch x := rng.IntN(100); {
		case x < 50:
			n = 1
		case x < 80:
			n = 2
		case x < 95:
			n = 3 + rng.IntN(2)
		default:
			n = 5 + rng.IntN(4)
		}
		i := rng.IntN(len(list) - n + 1)
		texts = append(texts, strings.Join(list[i:i+n], " "))
	}
	c, err := NewCorpus("the built-in corpus", texts)
	if err != nil {
		panic(err) // the embedded list is checked by TestDefaultCorpus
	}
	return c
}
