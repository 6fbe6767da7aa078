package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/espeak"
	"github.com/speech-infra/speech-infra/container/internal/kokoro"
	"github.com/speech-infra/speech-infra/container/internal/server"
)

// VoicesUsage is the summary of the voices subcommand.
const VoicesUsage = `usage: speech-container voices

Prints the voice list of the engine ENGINE names (MODEL_DIR for kokoro) as
one JSON object, the same answer POST /invocations gives to {"voices": true}:
{"engine":...,"default":...,"voices":[{"name","language","engine"},...]}.
Kokoro voices also mix: "af_bella(2)+af_sky(1)" (see README.md).`

// Voices runs `speech-container voices` (args without the subcommand name).
// It reads the voice names without loading the model.
func Voices(args []string, stdout io.Writer, getenv func(string) string) error {
	if len(args) > 0 {
		return &UsageError{Err: fmt.Errorf("voices takes no arguments (got %q)\n%s", args, VoicesUsage)}
	}
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("configuration: %w", err)}
	}
	list, err := VoiceList(cfg)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	return enc.Encode(list)
}

// VoiceList is the voice list of cfg's engine.
func VoiceList(cfg Config) (server.VoiceList, error) {
	var names []string
	var def string
	var lang func(string) string
	switch cfg.Engine {
	case EngineCalibration:
		c := &engine.Calibration{}
		return server.VoiceList{Engine: c.Name(), Default: c.DefaultVoice(), Voices: engine.ListVoices(c)}, nil
	case EngineEspeak:
		p := &espeak.Pool{}
		names, def, lang = p.Voices(), p.DefaultVoice(), p.VoiceLanguage
	case EngineKokoro:
		var err error
		if names, def, err = kokoro.VoiceNames(cfg.ModelDir); err != nil {
			return server.VoiceList{}, err
		}
		lang = kokoro.LangForVoice
	default:
		return server.VoiceList{}, errors.New("unknown engine " + cfg.Engine)
	}
	list := server.VoiceList{Engine: cfg.Engine, Default: def}
	for _, n := range names {
		list.Voices = append(list.Voices, engine.VoiceInfo{Name: n, Language: lang(n), Engine: cfg.Engine})
	}
	return list, nil
}
