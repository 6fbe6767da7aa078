package main

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"
)

// What an OpenAI client expects of a speech request that the container answers otherwise: the gateway fills in
// OpenAI's defaults and names before it forwards the body.
const (
	// openAIDefaultFormat is OpenAI's response_format when a request names none (the container's own is wav).
	openAIDefaultFormat = "mp3"
	// openAIPCMRate is the sample rate of OpenAI's pcm: raw 16-bit little-endian mono samples at 24 kHz. The
	// container resamples to it (libsoxr) when a pcm request names no sample_rate.
	openAIPCMRate = 24000
)

// openAIVoices maps OpenAI's built-in voice names to one of the engine's voices, by the model's engine. A
// voice the engine has itself is never mapped; a name outside this table goes to the container as it is.
// kokoro: the Kokoro-82M v1.0 voice of the same name where there is one (af_alloy, am_echo, bm_fable,
// am_onyx, af_nova), otherwise Kokoro-FastAPI's choice for that name where v1.0 still has the voice (shimmer
// af_sky, ash af_nicole, coral bf_emma, sage am_michael), and for OpenAI's newer names a v1.0 voice of
// the same kind. espeak: en-us, with fable British (en-gb-x-rp, as Kokoro's bm_fable) and ballad Scottish.
// calibration has the one voice.
var openAIVoices = map[string]map[string]string{
	"kokoro": {
		"alloy": "af_alloy", "ash": "af_nicole", "ballad": "bm_lewis", "cedar": "am_eric", "coral": "bf_emma",
		"echo": "am_echo", "fable": "bm_fable", "marin": "af_heart", "nova": "af_nova", "onyx": "am_onyx",
		"sage": "am_michael", "shimmer": "af_sky", "verse": "am_adam",
	},
	"espeak": {
		"alloy": "en-us", "ash": "en-us", "ballad": "en-gb-scotland", "cedar": "en-us", "coral": "en-us",
		"echo": "en-us", "fable": "en-gb-x-rp", "marin": "en-us", "nova": "en-us", "onyx": "en-us",
		"sage": "en-us", "shimmer": "en-us", "verse": "en-us",
	},
	"calibration": {
		"alloy": "calibration", "ash": "calibration", "ballad": "calibration", "cedar": "calibration", "coral": "calibration",
		"echo": "calibration", "fable": "calibration", "marin": "calibration", "nova": "calibration", "onyx": "calibration",
		"sage": "calibration", "shimmer": "calibration", "verse": "calibration",
	},
}

// metricFormats are the response_format values the metrics name; any other is counted as "other", so that
// no client can grow the label set.
var metricFormats = map[string]bool{"mp3": true, "opus": true, "aac": true, "flac": true, "wav": true, "pcm": true, "mulaw": true}

// jsonField is one member of a JSON object: its key as decoded, its value as it was sent.
type jsonField struct {
	key   string
	value json.RawMessage
}

// openAIRequest rewrites a speech request body to what OpenAI's clients expect of it, for the container: no
// format at all becomes response_format mp3 (OpenAI's default); pcm without a sample_rate gets sample_rate
// 24000 (OpenAI's pcm); an OpenAI voice name becomes the engine's voice (openAIVoices). It returns the body
// to forward and the response format the request asks for (for the metrics: "other" when it names none the
// metrics know or cannot be read).
//
// A body the container would refuse anyway (not UTF-8, not one JSON object, a key given twice or in two
// cases, a voice-list request) is forwarded untouched, so that its error is the container's; so is a body
// that needs no change. Only a body that changes is written anew: each value keeps its bytes, the order of
// the keys is kept, the added keys come last.
func openAIRequest(body []byte, engine string) (out []byte, format string) {
	fields, ok := jsonObject(body)
	if !ok {
		return body, "other"
	}
	seen := map[string]bool{}
	idx := map[string]int{}
	for i, f := range fields {
		k := strings.ToLower(f.key)
		if seen[k] {
			return body, "other"
		}
		seen[k] = true
		idx[f.key] = i
	}
	if _, ok := idx["voices"]; ok {
		return body, "other"
	}
	str := func(key string) (string, bool) {
		i, ok := idx[key]
		if !ok {
			return "", false
		}
		var s string
		if json.Unmarshal(fields[i].value, &s) != nil {
			return "", false
		}
		return s, true
	}
	changed := false
	_, hasRF := idx["response_format"]
	_, hasF := idx["format"]
	switch {
	case hasRF:
		format, _ = str("response_format")
	case hasF:
		format, _ = str("format")
	default:
		format = openAIDefaultFormat
		fields = append(fields, jsonField{"response_format", json.RawMessage(`"` + openAIDefaultFormat + `"`)})
		changed = true
	}
	if _, ok := idx["sample_rate"]; !ok && format == "pcm" {
		fields = append(fields, jsonField{"sample_rate", json.RawMessage(strconv.Itoa(openAIPCMRate))})
		changed = true
	}
	if v, ok := str("voice"); ok {
		if to, ok := openAIVoices[engine][v]; ok {
			b, _ := json.Marshal(to)
			fields[idx["voice"]].value = b
			changed = true
		}
	}
	if !metricFormats[format] {
		format = "other"
	}
	if !changed {
		return body, format
	}
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes(), format
}

// jsonObject reads body as exactly one JSON object (whitespace around it allowed) into its members in order.
func jsonObject(body []byte) ([]jsonField, bool) {
	if !utf8.Valid(body) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	var fields []jsonField
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, ok := t.(string)
		if !ok {
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		fields = append(fields, jsonField{key, v})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, false
	}
	return fields, true
}
