package server

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/kokoro"
)

// TestErrorsQuoteUserInputCut: a field of 64 KB makes neither a 64-KB error
// body nor a 64-KB log line. Every error quoting user input quotes it cut to
// 64 characters with its length (clip.Quote); a voice is refused over
// MaxVoiceChars before it is parsed; an X-Amzn-SageMaker-Inference-Id that
// InvokeEndpoint could not have sent is not echoed.
func TestErrorsQuoteUserInputCut(t *testing.T) {
	opts := defaultOptions()
	_, ts, logs := startServer(t, opts, &engine.Calibration{})
	big := strings.Repeat("v", 65536)
	for _, tc := range []struct{ body, field, want string }{
		{`{"text":"Hi","voice":"` + big + `"}`, "voice", "voice has 65536 characters, more than 200"},
		{`{"text":"Hi","voice":"` + strings.Repeat("v", 150) + `"}`, "voice", `(150 characters)`},
		{`{"text":"Hi","voice":"a+` + strings.Repeat("v", 150) + `"}`, "voice", `(152 characters)`},
		{`{"text":"Hi","format":"` + big + `"}`, "format", `(65536 characters)`},
		{`{"input":"Hi","response_format":"` + big + `"}`, "response_format", `(65536 characters)`},
		{`{"input":"Hi","stream_format":"` + big + `"}`, "stream_format", `(65536 characters)`},
		{`{"` + big + `":1}`, "body", `(65536 characters)`},
		{`{"text":"Hi","speed":` + strings.Repeat("9", 65536) + `}`, "speed", `(65536 characters)`},
	} {
		r := post(context.Background(), ts.URL, tc.body)
		if r.status != http.StatusBadRequest || len(r.body) > 1024 || !strings.Contains(string(r.body), `"field":"`+tc.field+`"`) || !strings.Contains(string(r.body), tc.want) {
			t.Errorf("%.40s…: %d, %d-byte body %.300s; want 400 naming %s, under 1 KiB, with %q", tc.body, r.status, len(r.body), r.body, tc.field, tc.want)
		}
	}
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/invocations", strings.NewReader(`{"text":"Hi"}`))
	req.Header.Set("X-Amzn-SageMaker-Inference-Id", strings.Repeat("i", 60000))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if id := res.Header.Get("X-Request-Id"); res.StatusCode != 200 || len(id) > 64 {
		t.Errorf("a 60-KB inference id: %d, X-Request-Id of %d bytes; want 200 and an id of the server's own", res.StatusCode, len(id))
	}
	req, _ = http.NewRequest(http.MethodPost, ts.URL+"/invocations", strings.NewReader(`{"text":"Hi"}`))
	req.Header.Set("X-Amzn-SageMaker-Inference-Id", "call-7f3a")
	if res, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if id := res.Header.Get("X-Request-Id"); id != "call-7f3a" {
		t.Errorf("a valid inference id came back as %q", id)
	}
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if len(line) > 2048 {
			t.Errorf("a %d-byte log line: %.200s…", len(line), line)
		}
	}
}

// TestVoiceMixWeightsBounded: a kokoro mix whose weights would overflow when
// summed is a 400 naming voice and the range, not a mix of zeros.
func TestVoiceMixWeightsBounded(t *testing.T) {
	known := map[string]*kokoro.Voice{"af_bella": nil, "af_sky": nil}
	lim := Limits{MaxTextChars: 100, Voices: []string{"af_bella", "af_sky"}, DefaultVoice: "af_bella", NativeRate: 24000,
		CheckVoice: func(name string) error { _, err := kokoro.ParseMix(name, known); return err }}
	_, rerr := DecodeRequest(strings.NewReader(`{"text":"Hi","voice":"af_bella(1e308)+af_sky(1e308)"}`), lim)
	if rerr == nil || rerr.Status != http.StatusBadRequest || rerr.Field != "voice" || !strings.Contains(rerr.Message, "positive number up to 1000") {
		t.Errorf("af_bella(1e308)+af_sky(1e308): %+v, want 400 naming voice and the weights' range", rerr)
	}
	if _, rerr := DecodeRequest(strings.NewReader(`{"text":"Hi","voice":"af_bella(2)+af_sky(1)"}`), lim); rerr != nil {
		t.Errorf("af_bella(2)+af_sky(1): %v", rerr)
	}
}
