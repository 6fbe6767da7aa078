package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"unicode/utf8"
)

// Speed bounds a request may ask for.
const (
	MinSpeed = 0.5
	MaxSpeed = 2.0
)

// Output formats.
const (
	FormatWAV = "wav"
	FormatPCM = "pcm"
)

// Request is a decoded, validated /invocations body.
type Request struct {
	Text   string
	Voice  string
	Speed  float64
	Format string
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
}

// wireRequest is the JSON body as sent.
type wireRequest struct {
	Text   *string  `json:"text"`
	Voice  string   `json:"voice"`
	Speed  *float64 `json:"speed"`
	Format string   `json:"format"`
}

// DecodeRequest reads one JSON object {text, voice, speed, format} from r and
// validates it. body is the reader already limited by http.MaxBytesReader, so
// an over-long body yields 413.
func DecodeRequest(r io.Reader, lim Limits) (Request, *RequestError) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var w wireRequest
	if err := dec.Decode(&w); err != nil {
		return Request{}, decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return Request{}, decodeError(err)
		}
		return Request{}, badRequest("body", "the body must be one JSON object and nothing after it")
	}
	if w.Text == nil {
		return Request{}, badRequest("text", "text is missing: send {\"text\": \"...\"}")
	}
	text := *w.Text
	if strings.TrimSpace(text) == "" {
		return Request{}, badRequest("text", "text is empty: send at least one word to speak")
	}
	if n := utf8.RuneCountInString(text); n > lim.MaxTextChars {
		return Request{}, badRequest("text", "text has %d characters, more than the limit of %d: split it into several requests", n, lim.MaxTextChars)
	}
	req := Request{Text: text, Voice: w.Voice, Speed: 1, Format: strings.ToLower(w.Format)}
	if req.Voice == "" {
		req.Voice = lim.DefaultVoice
	}
	if !slices.Contains(lim.Voices, req.Voice) {
		return Request{}, badRequest("voice", "unknown voice %q: use one of %s", req.Voice, strings.Join(lim.Voices, ", "))
	}
	if w.Speed != nil {
		req.Speed = *w.Speed
	}
	if !(req.Speed >= MinSpeed && req.Speed <= MaxSpeed) {
		return Request{}, badRequest("speed", "speed %g is outside [%g, %g]: send a value in that range (1 is normal)", req.Speed, MinSpeed, MaxSpeed)
	}
	if req.Format == "" {
		req.Format = FormatWAV
	}
	if req.Format != FormatWAV && req.Format != FormatPCM {
		return Request{}, badRequest("format", "unknown format %q: use %q or %q", w.Format, FormatWAV, FormatPCM)
	}
	return req, nil
}

func decodeError(err error) *RequestError {
	var mbe *http.MaxBytesError
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &mbe):
		return &RequestError{Status: http.StatusRequestEntityTooLarge, Code: "body_too_large", Field: "body",
			Message: fmt.Sprintf("the body is over %d bytes (MAX_BODY_BYTES): send shorter text", mbe.Limit)}
	case errors.As(err, &te):
		field := te.Field
		if field == "" {
			field = "body"
			return badRequest(field, "the body must be a JSON object, not %s", te.Value)
		}
		return badRequest(field, "%s must be a JSON %s, not %s", field, jsonKind(te.Type.Kind().String()), te.Value)
	case errors.As(err, &se):
		return badRequest("body", "invalid JSON at byte %d: %v", se.Offset, err)
	case errors.Is(err, io.EOF):
		return badRequest("body", "the body is empty: send a JSON object such as {\"text\": \"Hello.\"}")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("body", "invalid JSON: the body ends early")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		field := name
		if field == "" {
			field = "body"
		}
		return badRequest(field, "unknown field %q: the body takes text, voice, speed and format", name)
	}
	return badRequest("body", "invalid JSON: %v", err)
}

func jsonKind(goKind string) string {
	switch goKind {
	case "float64", "ptr":
		return "number"
	}
	return goKind
}
