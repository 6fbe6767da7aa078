package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"unicode/utf8"
)

// FuzzDecodeRequest checks the decoder's contract on any body: it never
// panics, an accepted request is fully valid, and a rejection is a 400 or
// 413 that names a field and says what to do.
func FuzzDecodeRequest(f *testing.F) {
	for _, seed := range []string{
		`{"text":"Hello world."}`,
		`{"text":"Hi","voice":"b","speed":0.5,"format":"pcm"}`,
		`{"text":"Hi","speed":2}`,
		`{"text":"Hi","speed":-1e308}`,
		`{"text":"\u00e9\ud83d\ude00","format":"WAV"}`,
		`{"text":"Hi"} x`,
		`{"text":"Hi","speed":null,"voice":null}`,
		`{"text":["a"]}`,
		`{"txt":"Hi"}`,
		`{"input":"Hi","model":"tts-1","voice":"a","response_format":"opus","instructions":""}`,
		`{"input":"Hi","response_format":"pcm","sample_rate":8000,"stream":false}`,
		`{"voices":true}`, `{"voices":true,"text":"x"}`, `{"text":"x","voice":"a(2)+b(1)"}`,
		`{`, ``, `null`, `"text"`, `{"text":"` + "\xff\xfe" + `"}`,
	} {
		f.Add([]byte(seed))
	}
	lim := Limits{MaxTextChars: 50, Voices: []string{"a", "b"}, DefaultVoice: "a"}
	f.Fuzz(func(t *testing.T, body []byte) {
		rec := httptest.NewRecorder()
		req, rerr := DecodeRequest(http.MaxBytesReader(rec, nopCloser{bytes.NewReader(body)}, 256), lim)
		if rerr != nil {
			if rerr.Status != http.StatusBadRequest && rerr.Status != http.StatusRequestEntityTooLarge {
				t.Fatalf("status %d", rerr.Status)
			}
			if rerr.Field == "" || rerr.Message == "" || rerr.Code == "" {
				t.Fatalf("rejection without field, code or message: %+v", rerr)
			}
			if rerr.Status == http.StatusRequestEntityTooLarge && len(body) <= 256 {
				t.Fatalf("413 for a %d-byte body", len(body))
			}
			return
		}
		if len(body) > 256 {
			t.Fatalf("accepted a %d-byte body over the limit", len(body))
		}
		if req.Voices {
			return
		}
		if req.Text == "" || utf8.RuneCountInString(req.Text) > lim.MaxTextChars {
			t.Fatalf("accepted text %q", req.Text)
		}
		if !slices.Contains(lim.Voices, req.Voice) {
			t.Fatalf("accepted voice %q", req.Voice)
		}
		if !(req.Speed >= MinSpeed && req.Speed <= MaxSpeed) {
			t.Fatalf("accepted speed %v", req.Speed)
		}
		if !req.Voices && !slices.Contains(Formats, req.Format) {
			t.Fatalf("accepted format %q", req.Format)
		}
	})
}

type nopCloser struct{ *bytes.Reader }

func (nopCloser) Close() error { return nil }
