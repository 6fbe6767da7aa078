package kokoro

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"sync"

	ort "github.com/yalue/onnxruntime_go"

	"github.com/speech-infra/speech-infra/container/internal/audio"
	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/espeak"
)

// SampleRate is Kokoro's output rate.
const SampleRate = 24000

// ModelFile is the ONNX model's path inside the model directory, as in the
// Kokoro-82M ONNX export.
const ModelFile = "onnx/model.onnx"

// TokenizerFile is the vocabulary's path inside the model directory.
const TokenizerFile = "tokenizer.json"

// Files returns the paths, relative to dir, of every file Load reads: the
// model, the tokenizer and each voice. The caller checks that the manifest
// lists them all before Load.
func Files(dir string) ([]string, error) {
	voices, err := voiceFiles(dir)
	if err != nil {
		return nil, err
	}
	return append([]string{ModelFile, TokenizerFile}, voices...), nil
}

// PreferredVoice is the default voice when the model directory has it.
const PreferredVoice = "af_heart"

// Config says where the model is and how to run it.
type Config struct {
	// ModelDir holds onnx/model.onnx, tokenizer.json and voices/.
	ModelDir string
	// LibPath is the ONNX Runtime shared library.
	LibPath string
	// Provider is "cpu" or "cuda".
	Provider string
	// Logf reports choices made while loading (provider fallback).
	Logf func(format string, args ...any)
}

// Signature is what Load read from the model: the names of its inputs and
// output and the type of its speed input.
type Signature struct {
	IDs, Style, Speed, Output string
	SpeedInt32                bool
}

// Engine is the kokoro engine. ONNX Runtime sessions may be run from several
// goroutines at once; G2P goes through espeak-ng's process-wide lock.
type Engine struct {
	session   *ort.DynamicAdvancedSession
	sig       Signature
	tok       *Tokenizer
	voices    map[string]*Voice
	names     []string
	def       string
	provider  string
	phonemize Phonemizer
}

var ortOnce sync.Once
var ortErr error

// Load reads the tokenizer and voices, initializes espeak-ng for G2P and ONNX
// Runtime, reads the model's signature and creates the session. The caller
// verifies the files against manifest.json first.
func Load(cfg Config) (*Engine, error) {
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	tok, err := LoadTokenizer(filepath.Join(cfg.ModelDir, TokenizerFile))
	if err != nil {
		return nil, err
	}
	voices, err := LoadVoices(cfg.ModelDir)
	if err != nil {
		return nil, err
	}
	if err := espeak.Init(); err != nil {
		return nil, fmt.Errorf("kokoro G2P: %w", err)
	}
	ortOnce.Do(func() {
		ort.SetSharedLibraryPath(cfg.LibPath)
		ortErr = ort.InitializeEnvironment()
	})
	if ortErr != nil {
		return nil, fmt.Errorf("load ONNX Runtime from %s: %w (set ONNXRUNTIME_LIB to libonnxruntime.so.1; scripts/install-onnxruntime.sh installs it)", cfg.LibPath, ortErr)
	}
	modelPath := filepath.Join(cfg.ModelDir, ModelFile)
	sig, err := ReadSignature(modelPath)
	if err != nil {
		return nil, err
	}
	opts, err := ort.NewSessionOptions()
	if err != nil {
		return nil, err
	}
	defer opts.Destroy()
	provider := "cpu"
	switch cfg.Provider {
	case "", "cpu":
	case "cuda":
		if err := appendCUDA(opts); err != nil {
			cfg.Logf("ONNX_PROVIDER=cuda but the CUDA execution provider is not available (%v); running on CPU", err)
		} else {
			provider = "cuda"
		}
	default:
		return nil, fmt.Errorf("ONNX_PROVIDER=%q: use cpu or cuda", cfg.Provider)
	}
	sess, err := ort.NewDynamicAdvancedSession(modelPath, []string{sig.IDs, sig.Style, sig.Speed}, []string{sig.Output}, opts)
	if err != nil {
		return nil, fmt.Errorf("create ONNX Runtime session for %s: %w", modelPath, err)
	}
	names := make([]string, 0, len(voices))
	for n := range voices {
		names = append(names, n)
	}
	sort.Strings(names)
	def := names[0]
	if _, ok := voices[PreferredVoice]; ok {
		def = PreferredVoice
	}
	return &Engine{session: sess, sig: sig, tok: tok, voices: voices, names: names, def: def, provider: provider, phonemize: espeak.Phonemes}, nil
}

func appendCUDA(opts *ort.SessionOptions) error {
	cuda, err := ort.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer cuda.Destroy()
	return opts.AppendExecutionProviderCUDA(cuda)
}

// ReadSignature reads the model's inputs and output: the token input is
// input_ids or tokens (int64), style is float32, speed is float32 or int32,
// and the output is waveform (or the only output).
func ReadSignature(modelPath string) (Signature, error) {
	ins, outs, err := ort.GetInputOutputInfo(modelPath)
	if err != nil {
		return Signature{}, fmt.Errorf("read the signature of %s: %w", modelPath, err)
	}
	var sig Signature
	for _, in := range ins {
		switch in.Name {
		case "input_ids", "tokens":
			if in.DataType != ort.TensorElementDataTypeInt64 {
				return sig, fmt.Errorf("%s: input %s is %v, want int64", modelPath, in.Name, in.DataType)
			}
			sig.IDs = in.Name
		case "style":
			if in.DataType != ort.TensorElementDataTypeFloat {
				return sig, fmt.Errorf("%s: input style is %v, want float32", modelPath, in.DataType)
			}
			sig.Style = in.Name
		case "speed":
			switch in.DataType {
			case ort.TensorElementDataTypeFloat:
			case ort.TensorElementDataTypeInt32:
				sig.SpeedInt32 = true
			default:
				return sig, fmt.Errorf("%s: input speed is %v, want float32 or int32", modelPath, in.DataType)
			}
			sig.Speed = in.Name
		default:
			return sig, fmt.Errorf("%s: unexpected input %q; a Kokoro export takes input_ids (or tokens), style and speed", modelPath, in.Name)
		}
	}
	if sig.IDs == "" || sig.Style == "" || sig.Speed == "" {
		return sig, fmt.Errorf("%s: inputs %v lack one of input_ids/tokens, style, speed", modelPath, names(ins))
	}
	for _, o := range outs {
		if o.Name == "waveform" {
			sig.Output = o.Name
		}
	}
	if sig.Output == "" && len(outs) == 1 {
		sig.Output = outs[0].Name
	}
	if sig.Output == "" {
		return sig, fmt.Errorf("%s: no waveform output among %v", modelPath, names(outs))
	}
	return sig, nil
}

func names(infos []ort.InputOutputInfo) []string {
	var n []string
	for _, i := range infos {
		n = append(n, i.Name)
	}
	return n
}

// Signature returns what Load read from the model.
func (e *Engine) Signature() Signature { return e.sig }

// Provider returns the execution provider in use, "cpu" or "cuda".
func (e *Engine) Provider() string { return e.provider }

// Name implements engine.Engine.
func (e *Engine) Name() string { return "kokoro" }

// SampleRate implements engine.Engine.
func (e *Engine) SampleRate() int { return SampleRate }

// Voices implements engine.Engine.
func (e *Engine) Voices() []string { return e.names }

// DefaultVoice implements engine.Engine.
func (e *Engine) DefaultVoice() string { return e.def }

// Tokenizer returns the engine's tokenizer.
func (e *Engine) Tokenizer() *Tokenizer { return e.tok }

// Synthesize implements engine.Engine: G2P, tokens in pieces of at most
// MaxPhonemes, one model run and one emitted chunk per piece.
func (e *Engine) Synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) error {
	v, err := e.voice(seg.Voice)
	if err != nil {
		return err
	}
	ps, err := G2P(seg.Text, LangForVoice(seg.Voice), e.phonemize)
	if err != nil {
		return err
	}
	for _, ids := range e.tok.Chunk(e.tok.Encode(ps), MaxPhonemes) {
		if err := ctx.Err(); err != nil {
			return err
		}
		wave, err := e.run(ctx, ids, v, seg.Speed)
		if err != nil {
			return err
		}
		if err := emit(audio.FloatToPCM16(wave)); err != nil {
			return err
		}
	}
	return nil
}

// run runs the model once. When ctx ends first (the client left, or the
// segment passed SEGMENT_TIMEOUT) ONNX Runtime is told to terminate the run,
// which it does at its next check between operators.
func (e *Engine) run(ctx context.Context, ids []int64, v *Voice, speed float64) ([]float32, error) {
	padded := make([]int64, 0, len(ids)+2)
	padded = append(padded, PadID)
	padded = append(padded, ids...)
	padded = append(padded, PadID)
	idsT, err := ort.NewTensor(ort.NewShape(1, int64(len(padded))), padded)
	if err != nil {
		return nil, err
	}
	defer idsT.Destroy()
	styleT, err := ort.NewTensor(ort.NewShape(1, StyleDim), append([]float32(nil), v.Style(len(ids))...))
	if err != nil {
		return nil, err
	}
	defer styleT.Destroy()
	var speedV ort.Value
	if e.sig.SpeedInt32 {
		t, err := ort.NewTensor(ort.NewShape(1), []int32{int32(math.Round(speed))})
		if err != nil {
			return nil, err
		}
		defer t.Destroy()
		speedV = t
	} else {
		t, err := ort.NewTensor(ort.NewShape(1), []float32{float32(speed)})
		if err != nil {
			return nil, err
		}
		defer t.Destroy()
		speedV = t
	}
	opts, err := ort.NewRunOptions()
	if err != nil {
		return nil, fmt.Errorf("kokoro: run options: %w", err)
	}
	// Terminate may run concurrently with the end of the run: the lock keeps
	// it from touching the options after Destroy.
	var omu sync.Mutex
	destroyed := false
	stop := context.AfterFunc(ctx, func() {
		omu.Lock()
		defer omu.Unlock()
		if !destroyed {
			opts.Terminate()
		}
	})
	defer func() {
		stop()
		omu.Lock()
		destroyed = true
		omu.Unlock()
		opts.Destroy()
	}()
	outs := []ort.Value{nil}
	if err := e.session.RunWithOptions([]ort.Value{idsT, styleT, speedV}, outs, opts); err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			return nil, fmt.Errorf("kokoro: model run terminated: %w", cerr)
		}
		return nil, fmt.Errorf("kokoro: model run: %w", err)
	}
	defer outs[0].Destroy()
	out, ok := outs[0].(*ort.Tensor[float32])
	if !ok {
		return nil, errors.New("kokoro: model output is not a float32 tensor")
	}
	return append([]float32(nil), out.GetData()...), nil
}

// Close implements engine.Engine.
func (e *Engine) Close() error { return e.session.Destroy() }
