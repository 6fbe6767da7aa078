package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/speech-infra/speech-infra/container/internal/clip"
)

// Speed bounds a request may ask for.
const (
	MinSpeed = 0.5
	MaxSpeed = 2.0
)

// Output formats (response_format / format). Names are lower case, as in
// OpenAI's speech API; "WAV" is refused with the right spelling rather than
// folded, as keys are case-sensitive too.
const (
	FormatWAV   = "wav"
	FormatPCM   = "pcm"
	FormatOpus  = "opus"
	FormatMuLaw = "mulaw"
	FormatMP3   = "mp3"
	FormatFLAC  = "flac"
)

// Formats are the output formats a request may name, in the order error
// messages list them.
var Formats = []string{FormatWAV, FormatPCM, FormatOpus, FormatMuLaw, FormatMP3, FormatFLAC}

// MuLawRate is the only sample rate of the mulaw format (G.711 telephony).
const MuLawRate = 8000

// MaxModelChars bounds the model field, which is only logged.
const MaxModelChars = 200

// MaxVoiceChars bounds the voice field: far more than any voice name or a
// mix of kokoro.MaxMixParts voices with their weights needs. It is checked
// before the voice is parsed, and the voice is logged with each request.
const MaxVoiceChars = 200

// Request is a decoded, validated /invocations body. Two shapes are accepted
// (README "Contract"): the container's own {text, voice, speed, format} and
// OpenAI's speech request {input, voice, speed, response_format, model,
// instructions}; sample_rate and stream go with either. {"voices": true}
// alone asks for the voice list (Voices set, nothing else).
type Request struct {
	Text   string
	Voice  string
	Speed  float64
	Format string
	// SampleRate is the output rate asked for; 0 is the format's default
	// (the engine's rate; 8000 for mulaw; 48000 for opus).
	SampleRate int
	// Stream false asks for the whole answer at once, with a WAV header
	// whose sizes are exact and a Content-Length.
	Stream bool
	// Model is OpenAI's model field: logged, never used to pick anything.
	Model string
	// Voices is a voice-list request.
	Voices bool
}

// RequestError is a rejected request: the HTTP status, a machine-readable
// code, the offending field and a message that says how to fix it.
type RequestError struct {
	Status  int    `json:"-"`
	Code    string `json:"error"`
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// Error implements error.
func (e *RequestError) Error() string { return e.Field + ": " + e.Message }

func badRequest(field, format string, args ...any) *RequestError {
	return &RequestError{Status: http.StatusBadRequest, Code: "invalid_request", Field: field, Message: fmt.Sprintf(format, args...)}
}

// Limits are what DecodeRequest checks a request against.
type Limits struct {
	// MaxTextChars is the most characters (runes) text may have.
	MaxTextChars int
	// Voices are the engine's voices; DefaultVoice fills an empty voice.
	Voices       []string
	DefaultVoice string
	// NativeRate is the engine's sample rate, always a valid sample_rate for
	// wav and pcm.
	NativeRate int
	// CheckVoice, when set, accepts voice names beyond Voices (Kokoro's
	// mixes, "af_bella(2)+af_sky(1)") or says why not. Unset, a mix is
	// refused as a feature of another engine.
	CheckVoice func(name string) error
}

// Fields are the keys a request body takes, spelled exactly so: keys are
// case-sensitive and each may appear once.
var Fields = []string{"text", "input", "voice", "speed", "format", "response_format", "sample_rate", "stream", "stream_format", "model", "instructions", "voices"}

// PCMRates are the sample rates pcm and wav may be resampled to (besides
// the engine's own).
var PCMRates = []int{8000, 16000, 24000}

// DecodeRequest reads one JSON object (either shape, see Request) from r and
// validates it. body is the reader already limited by http.MaxBytesReader,
// so an over-long body yields 413; a read deadline that passes yields 408.
//
// The object is walked key by key rather than unmarshaled into a struct:
// encoding/json would take the last of two "text" keys and match "TEXT" to
// "text", so a body could mean one thing to this server and another to a
// proxy or log reader in front of it. A duplicate or case-variant key is
// refused, naming the key. A null value is refused too (encoding/json would
// read it as "absent"): leave the field out for its default.
func DecodeRequest(r io.Reader, lim Limits) (Request, *RequestError) {
	raw, err := io.ReadAll(r)
	if err != nil {
		return Request{}, readError(err)
	}
	if !utf8.Valid(raw) {
		i := invalidUTF8At(raw)
		return Request{}, badRequest("body", "the body is not valid UTF-8 (bad byte at offset %d): send UTF-8 JSON", i)
	}
	vals, rerr := walkObject(raw)
	if rerr != nil {
		return Request{}, rerr
	}
	var text, voice, format, model, instructions, streamFormat *string
	var speed *float64
	var sampleRate *int
	var stream, voices *bool
	for _, f := range []struct {
		name, kind string
		dst        any
	}{
		{"text", "string", &text}, {"input", "string", &text}, {"voice", "string", &voice}, {"speed", "number", &speed},
		{"format", "string", &format}, {"response_format", "string", &format}, {"sample_rate", "whole number", &sampleRate},
		{"stream", "boolean", &stream}, {"stream_format", "string", &streamFormat}, {"model", "string", &model}, {"instructions", "string", &instructions},
		{"voices", "boolean", &voices},
	} {
		v, ok := vals[f.name]
		if !ok {
			continue
		}
		if describeJSON(v) == "null" {
			return Request{}, badRequest(f.name, "%s must be a JSON %s, not null: leave the field out for its default", f.name, f.kind)
		}
		if err := json.Unmarshal(v, f.dst); err != nil {
			return Request{}, badRequest(f.name, "%s must be a JSON %s, not %s", f.name, f.kind, describeJSON(v))
		}
	}
	for _, pair := range [][2]string{{"text", "input"}, {"format", "response_format"}} {
		_, a := vals[pair[0]]
		_, b := vals[pair[1]]
		if a && b {
			return Request{}, badRequest(pair[1], "%s and %s are the same field in the two request shapes: send one of them", pair[0], pair[1])
		}
	}
	if voices != nil {
		if !*voices {
			return Request{}, badRequest("voices", "voices must be true (it asks for the voice list): leave it out to synthesize")
		}
		for k := range vals {
			if k != "voices" {
				return Request{}, badRequest(k, "a voice-list request {\"voices\": true} takes no other field, got %s", clip.Quote(k))
			}
		}
		return Request{Voices: true}, nil
	}
	textField := "text"
	if _, ok := vals["input"]; ok {
		textField = "input"
	}
	if text == nil {
		return Request{}, badRequest("text", "text is missing: send {\"text\": \"...\"} (or OpenAI's {\"input\": \"...\"})")
	}
	if rerr := checkChars(textField, *text, true); rerr != nil {
		return Request{}, rerr
	}
	if strings.TrimSpace(*text) == "" {
		return Request{}, badRequest(textField, "%s is empty: send at least one word to speak", textField)
	}
	if !hasWord(*text) {
		return Request{}, badRequest(textField, "%s has no letters, digits or symbols, only spaces, punctuation or invisible characters: send at least one word to speak", textField)
	}
	if n := utf8.RuneCountInString(*text); n > lim.MaxTextChars {
		return Request{}, badRequest(textField, "%s has %d characters, more than the limit of %d: split it into several requests", textField, n, lim.MaxTextChars)
	}
	req := Request{Text: *text, Speed: 1, Stream: true}
	if instructions != nil && *instructions != "" {
		return Request{}, badRequest("instructions", "instructions are not supported: the engines cannot follow them (send an empty string or leave the field out)")
	}
	if streamFormat != nil && *streamFormat != "audio" {
		return Request{}, badRequest("stream_format", "stream_format %s is not offered: the audio streams as raw bytes (\"audio\"); server-sent events (\"sse\") are not supported", clip.Quote(*streamFormat))
	}
	if model != nil {
		if rerr := checkChars("model", *model, false); rerr != nil {
			return Request{}, rerr
		}
		if n := utf8.RuneCountInString(*model); n > MaxModelChars {
			return Request{}, badRequest("model", "model has %d characters, more than %d (it is only logged)", n, MaxModelChars)
		}
		req.Model = *model
	}
	if voice != nil {
		if rerr := checkChars("voice", *voice, false); rerr != nil {
			return Request{}, rerr
		}
		if n := utf8.RuneCountInString(*voice); n > MaxVoiceChars {
			return Request{}, badRequest("voice", "voice has %d characters, more than %d: use a voice name from the list, or a mix such as af_bella(2)+af_sky(1)", n, MaxVoiceChars)
		}
		req.Voice = *voice
	}
	if req.Voice == "" {
		req.Voice = lim.DefaultVoice
	}
	if !slices.Contains(lim.Voices, req.Voice) {
		if strings.ContainsAny(req.Voice, "+(") {
			if lim.CheckVoice == nil {
				return Request{}, badRequest("voice", "voice mixing (%s) is a kokoro feature: this engine takes one voice, one of %s", clip.Quote(req.Voice), strings.Join(lim.Voices, ", "))
			}
			if err := lim.CheckVoice(req.Voice); err != nil {
				return Request{}, badRequest("voice", "%v", err)
			}
		} else {
			return Request{}, badRequest("voice", "unknown voice %s: use one of %s (voice names are case-sensitive)", clip.Quote(req.Voice), strings.Join(lim.Voices, ", "))
		}
	}
	if speed != nil {
		req.Speed = *speed
	}
	if !(req.Speed >= MinSpeed && req.Speed <= MaxSpeed) {
		return Request{}, badRequest("speed", "speed %g is outside [%g, %g]: send a value in that range (1 is normal)", req.Speed, MinSpeed, MaxSpeed)
	}
	formatField := "format"
	if _, ok := vals["response_format"]; ok {
		formatField = "response_format"
	}
	if format != nil {
		if rerr := checkChars(formatField, *format, false); rerr != nil {
			return Request{}, rerr
		}
		req.Format = *format
	} else {
		req.Format = FormatWAV
	}
	if !slices.Contains(Formats, req.Format) {
		if l := strings.ToLower(req.Format); slices.Contains(Formats, l) {
			return Request{}, badRequest(formatField, "unknown format %s: format names are lower case, use %q", clip.Quote(req.Format), l)
		}
		return Request{}, badRequest(formatField, "unknown format %s: use one of %s", clip.Quote(req.Format), strings.Join(Formats, ", "))
	}
	if stream != nil {
		req.Stream = *stream
	}
	if sampleRate != nil {
		req.SampleRate = *sampleRate
		switch req.Format {
		case FormatWAV, FormatPCM, FormatFLAC:
			if req.SampleRate != lim.NativeRate && !slices.Contains(PCMRates, req.SampleRate) {
				return Request{}, badRequest("sample_rate", "sample_rate %d is not offered for %s: use 8000, 16000, 24000 or the engine's %d", req.SampleRate, req.Format, lim.NativeRate)
			}
		case FormatMuLaw:
			if req.SampleRate != MuLawRate {
				return Request{}, badRequest("sample_rate", "mulaw is G.711 at %d Hz only: leave sample_rate out or send %d", MuLawRate, MuLawRate)
			}
		default:
			return Request{}, badRequest("sample_rate", "sample_rate applies to wav, pcm, flac and mulaw, not %s: leave it out", req.Format)
		}
	}
	return req, nil
}

// walkObject checks that raw is exactly one JSON object whose keys are among
// Fields, each once and spelled exactly, and returns the raw value of each.
func walkObject(raw []byte) (map[string]json.RawMessage, *RequestError) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	tok, err := dec.Token()
	if err != nil {
		return nil, decodeError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, badRequest("body", "the body must be a JSON object such as {\"text\": \"Hello.\"}, not %s", describeToken(tok))
	}
	// Past the opening brace, running out of body means the object is cut
	// short, not that the body is empty.
	inObject := func(err error) *RequestError {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return decodeError(err)
	}
	vals := map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, inObject(err)
		}
		key, ok := tok.(string)
		if !ok {
			return nil, badRequest("body", "invalid JSON: an object key must be a string")
		}
		if !slices.Contains(Fields, key) {
			// The field names the key when it is short and printable; a
			// long one is only quoted, cut (clip.Quote), in the message.
			field := key
			if rerr := checkChars("key", key, false); rerr != nil || field == "" || utf8.RuneCountInString(key) > clip.MaxRunes {
				field = "body"
			}
			for _, f := range Fields {
				if strings.EqualFold(f, key) {
					return nil, badRequest(field, "unknown field %s: keys are case-sensitive, use %q", clip.Quote(key), f)
				}
			}
			return nil, badRequest(field, "unknown field %s: the body takes %s", clip.Quote(key), strings.Join(Fields, ", "))
		}
		if _, dup := vals[key]; dup {
			return nil, badRequest(key, "the key %s appears more than once: send each field once", clip.Quote(key))
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, inObject(err)
		}
		vals[key] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, inObject(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, badRequest("body", "the body must be one JSON object and nothing after it")
	}
	return vals, nil
}

// checkChars refuses characters that would silently change what is spoken or
// matched: NUL (libespeak-ng reads C strings and stops there), the other C0
// and C1 control characters (tab, newline and carriage return are allowed in
// text, where they are whitespace), and U+FFFD, which is what JSON decoding
// makes of an unpaired surrogate escape such as \ud800.
func checkChars(field, v string, isText bool) *RequestError {
	for i, r := range v {
		switch {
		case r == utf8.RuneError:
			return badRequest(field, "%s has U+FFFD at byte %d (an unpaired surrogate escape such as \\ud800, or a replacement character): send valid Unicode text", field, i)
		case isText && (r == '\t' || r == '\n' || r == '\r'):
		case unicode.IsControl(r):
			return badRequest(field, "%s has the control character %U at byte %d: remove it (%s takes printable text%s)", field, r, i, field, map[bool]string{true: ", with tab, newline and carriage return as whitespace", false: ""}[isText])
		}
	}
	return nil
}

// hasWord reports whether text has something to speak: a letter, a number or
// a symbol ("$", "%" and emoji have spoken names).
func hasWord(text string) bool {
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsSymbol(r) {
			return true
		}
	}
	return false
}

func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return -1
}

// describeJSON names the kind of a raw JSON value for a type error.
func describeJSON(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return "nothing"
	}
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "the number " + clip.Quote(string(v)) + " (it must fit a float64)"
}

func describeToken(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			return "an array"
		}
		return string(t)
	case string:
		return "a string"
	case float64, json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%v", tok)
}

// readError classifies a failure to read the body.
func readError(err error) *RequestError {
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		return decodeError(err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return &RequestError{Status: http.StatusRequestTimeout, Code: "body_timeout", Field: "body",
			Message: "the body did not arrive in time (BODY_READ_TIMEOUT): send the whole body at once"}
	}
	return badRequest("body", "the body could not be read: %v", err)
}

func decodeError(err error) *RequestError {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &mbe):
		return &RequestError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Field: "body",
			Message: fmt.Sprintf("the body is over %d bytes (MAX_BODY_BYTES): send shorter text", mbe.Limit)}
	case errors.As(err, &se):
		return badRequest("body", "invalid JSON at byte %d: %v", se.Offset, err)
	case errors.Is(err, io.EOF):
		return badRequest("body", "the body is empty: send a JSON object such as {\"text\": \"Hello.\"}")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "invalid JSON: the body ends early")
	}
	return badRequest("body", "invalid JSON: %v", err)
}
