package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/models"
)

// The gateway refuses a non-loopback --listen without a key (exit 2, before touching AWS), and a key that is
// unset or short.
func TestGatewayRefusesOpenListenWithoutKey(t *testing.T) {
	t.Setenv("SHORT_KEY", "abc")
	for _, args := range [][]string{
		{"gateway", "espeak-ng", "--listen", "0.0.0.0"},
		{"gateway", "espeak-ng", "--listen", "::"},
		{"gateway", "espeak-ng", "--listen", "0.0.0.0", "--api-key-env", "NO_SUCH_KEY_VAR"},
		{"gateway", "espeak-ng", "--listen", "0.0.0.0", "--api-key-env", "SHORT_KEY"},
		{"gateway", "espeak-ng", "--listen", "localhost"},
		{"gateway"},
	} {
		_, stderr, code := invoke(t, args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (stderr %q)", args, code, stderr)
		}
		if args[len(args)-1] == "0.0.0.0" && !strings.Contains(stderr, "--api-key-env") {
			t.Errorf("%v: the refusal does not name --api-key-env: %q", args, stderr)
		}
	}
}

// fakeRuntime answers every invocation with err.
type fakeRuntime struct{ err error }

func (f fakeRuntime) InvokeEndpointWithResponseStream(context.Context, *sagemakerruntime.InvokeEndpointWithResponseStreamInput, ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error) {
	return nil, f.err
}

func (f fakeRuntime) InvokeEndpoint(context.Context, *sagemakerruntime.InvokeEndpointInput, ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointOutput, error) {
	return nil, f.err
}

func modelError(status int, body string) error {
	return &rttypes.ModelError{OriginalStatusCode: aws.Int32(int32(status)), OriginalMessage: aws.String(body), Message: aws.String("Received client error")}
}

// Errors reach the client in OpenAI's shape: a validation error 400 naming the parameter, the shield 429 with
// Retry-After, a missing endpoint and an unreachable one 502 with the fix; a wrong or missing key 401.
func TestGatewayErrorShapes(t *testing.T) {
	cases := []struct {
		name       string
		err        error
		status     int
		param      string
		code       string
		retryAfter bool
		mention    string
	}{
		{"validation", modelError(400, `{"error":"invalid_request","field":"response_format","message":"unknown format \"ogg\""}`), 400, "response_format", "invalid_request", false, "ogg"},
		{"shield", modelError(503, `{"error":"queue_saturated","queue_depth":16,"max_queue_depth":16}`), 429, "", "queue_saturated", true, "queue limit"},
		{"draining", modelError(503, `{"error":"shutting_down","message":"this instance is draining"}`), 503, "", "shutting_down", true, "draining"},
		{"engine", modelError(500, `{"error":"engine_failure","message":"boom"}`), 500, "", "engine_failure", false, "boom"},
		{"no endpoint", &smithyErr{code: "ValidationError", msg: "Endpoint speech-x of account 1 not found."}, 502, "", "endpoint_unavailable", false, "speech-infra deploy"},
		{"unreachable", errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), 502, "", "endpoint_unreachable", false, "could not be reached"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGateway(gatewayConfig{model: "espeak-ng", endpoint: "speech-espeak-ng", where: "AWS (eu-west-3)", maxStreams: 4, newClient: func() speechInvoker { return fakeRuntime{c.err} }})
			rec := httptest.NewRecorder()
			g.ServeHTTP(rec, httptest.NewRequest("POST", "/v1/audio/speech", strings.NewReader(`{"input":"hi"}`)))
			var body struct{ Error openAIError }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("%s: %v", rec.Body, err)
			}
			e := body.Error
			if rec.Code != c.status || aws.ToString(e.Code) != c.code || aws.ToString(e.Param) != c.param || !strings.Contains(e.Message, c.mention) {
				t.Errorf("%d %s, want %d code %s param %q mentioning %q", rec.Code, rec.Body, c.status, c.code, c.param, c.mention)
			}
			for _, leak := range []string{"127.0.0.1", "of account", "dial tcp", "eu-west-3"} {
				if strings.Contains(rec.Body.String(), leak) {
					t.Errorf("the body tells the client %q (an address, the account or where the gateway points): %s", leak, rec.Body)
				}
			}
			if (rec.Header().Get("Retry-After") != "") != c.retryAfter {
				t.Errorf("Retry-After %q", rec.Header().Get("Retry-After"))
			}
		})
	}
	key := []byte("0123456789abcdef0123")
	g := newGateway(gatewayConfig{key: key, maxStreams: 1, newClient: func() speechInvoker { return fakeRuntime{errors.New("unreached")} }})
	for _, auth := range []string{"", "Bearer wrong", "Bearer 0123456789abcdef012", "0123456789abcdef0123", "Bearer 0123456789abcdef0123 ", "Basic 0123456789abcdef0123", "Bearer0123456789abcdef0123", "Bearerx 0123456789abcdef0123"} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/models", nil)
		req.Header.Set("Authorization", auth)
		g.ServeHTTP(rec, req)
		if rec.Code != 401 || !strings.Contains(rec.Body.String(), "invalid_api_key") {
			t.Errorf("Authorization %q: %d %s", auth, rec.Code, rec.Body)
		}
	}
	// The auth-scheme is case-insensitive, and one or more spaces separate it from the token (RFC 9110
	// sections 11.1 and 11.4).
	for _, scheme := range []string{"Bearer ", "bearer ", "BEARER ", "bEaReR ", "Bearer   "} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/v1/models", nil)
		req.Header.Set("Authorization", scheme+string(key))
		g.ServeHTTP(rec, req)
		if rec.Code != 200 {
			t.Errorf("right key after %q: %d %s", scheme, rec.Code, rec.Body)
		}
	}
}

type smithyErr struct{ code, msg string }

func (e *smithyErr) Error() string                 { return e.code + ": " + e.msg }
func (e *smithyErr) ErrorCode() string             { return e.code }
func (e *smithyErr) ErrorMessage() string          { return e.msg }
func (e *smithyErr) ErrorFault() smithy.ErrorFault { return smithy.FaultClient }

// lookTool returns the path of tool, failing under CI=true and skipping elsewhere when it is missing.
func lookTool(t *testing.T, tool, install string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not on PATH: %s", tool, install)
		}
		t.Skipf("%s is not on PATH (%s); skipped outside CI, under CI=true this fails", tool, install)
	}
	return p
}

// soxDuration is what soxi -D says of path.
func soxDuration(t *testing.T, path string) float64 {
	t.Helper()
	out, err := exec.Command("soxi", "-D", path).CombinedOutput()
	if err != nil {
		t.Fatalf("soxi -D %s: %v: %s", path, err, out)
	}
	d, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
	if err != nil {
		t.Fatalf("soxi -D %s: %q", path, out)
	}
	return d
}

func runTool(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// The official openai npm SDK streams wav, pcm, opus and mulaw through the gateway on the
// emulator; each answer decodes with a real decoder (sox, opusinfo/opusdec) to the duration of the same
// text's WAV from a direct InvokeEndpoint within 20 ms; the voice list through the gateway is the one
// {"voices": true} gives through InvokeEndpoint; the shield's 503 reaches the SDK as a RateLimitError (429
// with Retry-After); and SIGTERM lets a stream in flight finish.
func TestGatewayWithOpenAISDKOnTheEmulator(t *testing.T) {
	node := lookTool(t, "node", "install Node.js 20")
	for _, tool := range []string{"sox", "soxi", "opusinfo", "opusdec"} {
		lookTool(t, tool, "make deps-container installs sox and opus-tools")
	}
	root, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(root, "node_modules", "openai", "package.json")); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the openai npm package is not installed: run make deps-node (npm ci)")
		}
		t.Skip("the openai npm package is not installed (make deps-node); skipped outside CI")
	}
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService())
	emulatortest.Endpoint(t, e, "speech-busy", emulatortest.InService(), emulatortest.Env(map[string]string{
		"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "4000", "QUEUE_MAX_DEPTH": "1",
	}))
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	start := func(endpoint string) (string, context.CancelFunc, chan error) {
		ctx, cancel := context.WithCancel(context.Background())
		addr := make(chan string, 1)
		o := &gatewayOpts{args: []string{"espeak-ng"}, catalog: cat, settings: awsenv.Settings{Local: true, StateDir: e.StateDir},
			listen: "127.0.0.1", endpoint: endpoint, maxStreams: 64, grace: 20 * time.Second, getenv: os.Getenv, stderr: io.Discard,
			ready: func(a string) { addr <- a }}
		withGatewayDefaults(o)
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- o.Execute(ctx) }()
		select {
		case a := <-addr:
			return "http://" + a + "/v1", cancel, done
		case err := <-done:
			t.Fatalf("gateway for %s: %v", endpoint, err)
		}
		return "", cancel, done
	}
	base, stop, _ := start("speech-espeak-ng")
	defer stop()
	busyBase, stopBusy, busyDone := start("speech-busy")
	defer stopBusy()

	const text = "The gateway streams speech. Every format decodes to the same length."
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(root, "cmd/speech-infra/testdata/gateway_openai.mjs"), base, busyBase, out, text)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	var res struct {
		Formats map[string]struct {
			Bytes        int
			ContentType  string
			FirstChunkMs float64
			Chunks       int
		}
		Default struct {
			Bytes       int
			ContentType string
		}
		Voices       json.RawMessage
		Models       []string
		Model        map[string]any
		UnknownModel struct {
			NotFound          bool
			Status            int
			Code, Param, Type *string
		}
		Busy struct {
			RateLimit  bool
			Status     int
			RetryAfter *string
			Code       *string
			Message    string
			HeldBytes  int
		}
	}
	if err := json.Unmarshal(stdout.Bytes(), &res); err != nil {
		t.Fatalf("node output %q: %v", stdout.String(), err)
	}
	t.Logf("SDK results: %s", stdout.String())

	// The reference: the same text's WAV from a direct InvokeEndpoint, with exact sizes.
	direct, err := e.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String("speech-espeak-ng"), ContentType: aws.String("application/json"),
		Body: []byte(`{"text":"` + text + `","voice":"en-us","stream":false}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	refPath := filepath.Join(out, "direct.wav")
	os.WriteFile(refPath, direct.Body, 0o644)
	want := soxDuration(t, refPath)
	if want < 2 {
		t.Fatalf("direct WAV is %v s long", want)
	}

	got := map[string]float64{}
	// wav: a streamed header (unknown length); sox reads it with --ignore-length.
	runTool(t, "sox", "--ignore-length", filepath.Join(out, "out.wav"), filepath.Join(out, "wav.wav"))
	got["wav"] = soxDuration(t, filepath.Join(out, "wav.wav"))
	// pcm: OpenAI's, s16le mono at 24 kHz (the engine's rate is 22050 Hz: the gateway asks the container to
	// resample).
	runTool(t, "sox", "-t", "raw", "-e", "signed-integer", "-b", "16", "-L", "-r", "24000", "-c", "1", filepath.Join(out, "out.pcm"), filepath.Join(out, "pcm.wav"))
	got["pcm"] = soxDuration(t, filepath.Join(out, "pcm.wav"))
	// mulaw: G.711 at 8 kHz.
	runTool(t, "sox", "-t", "ul", "-r", "8000", "-c", "1", filepath.Join(out, "out.mulaw"), filepath.Join(out, "mulaw.wav"))
	got["mulaw"] = soxDuration(t, filepath.Join(out, "mulaw.wav"))
	// opus: opusinfo must not warn; opusdec decodes.
	info := runTool(t, "opusinfo", filepath.Join(out, "out.opus"))
	if strings.Contains(info, "WARNING") || strings.Contains(info, "ERROR") {
		t.Errorf("opusinfo:\n%s", info)
	}
	runTool(t, "opusdec", "--quiet", filepath.Join(out, "out.opus"), filepath.Join(out, "opus.wav"))
	got["opus"] = soxDuration(t, filepath.Join(out, "opus.wav"))
	for _, f := range []string{"wav", "pcm", "opus", "mulaw"} {
		if d := got[f] - want; d > 0.020 || d < -0.020 {
			t.Errorf("%s decodes to %.4f s, the direct WAV is %.4f s (off by %.1f ms, more than 20)", f, got[f], want, d*1000)
		}
		if r := res.Formats[f]; r.Bytes == 0 || r.FirstChunkMs <= 0 {
			t.Errorf("%s: SDK result %+v", f, r)
		}
	}
	if ct := res.Formats["opus"].ContentType; !strings.HasPrefix(ct, "audio/ogg") {
		t.Errorf("opus Content-Type %q", ct)
	}

	// No response_format and OpenAI's voice alloy: mp3 (OpenAI's default), every byte a whole MPEG audio frame,
	// as long as the direct WAV plus what an mp3 encoder adds (LAME's delay and the last frame's padding).
	if res.Default.ContentType != "audio/mpeg" {
		t.Errorf("no response_format: Content-Type %q, want audio/mpeg (OpenAI's default mp3)", res.Default.ContentType)
	}
	mp3, err := os.ReadFile(filepath.Join(out, "out.default"))
	if err != nil {
		t.Fatal(err)
	}
	if d, err := mp3Duration(mp3); err != nil {
		t.Errorf("no response_format, voice alloy: not an mp3 stream: %v", err)
	} else if d-want < 0 || d-want > 0.120 {
		t.Errorf("no response_format, voice alloy: the mp3 lasts %.4f s, the direct WAV %.4f s; want 0 to 120 ms more", d, want)
	}

	// models.retrieve: OpenAI's Model object; an unknown id is the SDK's NotFoundError with OpenAI's code.
	if res.Model["id"] != "espeak-ng" || res.Model["object"] != "model" || res.Model["owned_by"] == nil || res.Model["created"] == nil {
		t.Errorf("models.retrieve(\"espeak-ng\") = %v, want OpenAI's Model object", res.Model)
	}
	if u := res.UnknownModel; !u.NotFound || u.Status != 404 || aws.ToString(u.Code) != "model_not_found" || aws.ToString(u.Param) != "model" || aws.ToString(u.Type) != "invalid_request_error" {
		t.Errorf("models.retrieve(\"tts-1\") reached the SDK as %+v, want a NotFoundError 404 model_not_found", u)
	}

	// /metrics counts what the SDK did, by format and status, in the Prometheus text format.
	mf := scrapeMetrics(t, strings.TrimSuffix(base, "/v1")+"/metrics", "")
	for f, n := range map[string]float64{"wav": 1, "pcm": 1, "opus": 1, "mulaw": 1, "mp3": 1} {
		if got := metricValue(mf, "speech_infra_gateway_speech_requests_total", map[string]string{"format": f, "status": "200"}); got != n {
			t.Errorf("/metrics: %s answered 200: %v, want %v", f, got, n)
		}
	}
	if got := metricValue(mf, "speech_infra_gateway_requests_total", map[string]string{"route": "/v1/models/{model}", "status": "404"}); got != 1 {
		t.Errorf("/metrics: the unknown model's 404: %v, want 1", got)
	}

	// Voices: the gateway's list is InvokeEndpoint's {"voices": true}.
	vd, err := e.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String("speech-espeak-ng"), ContentType: aws.String("application/json"), Body: []byte(`{"voices":true}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	json.Unmarshal(vd.Body, &a)
	json.Unmarshal(res.Voices, &b)
	if aj, bj := mustJSON(a), mustJSON(b); aj != bj || !strings.Contains(aj, `"language":"en-us"`) {
		t.Errorf("voices through the gateway %s, through InvokeEndpoint %s", bj, aj)
	}
	if len(res.Models) != 1 || res.Models[0] != "espeak-ng" {
		t.Errorf("models %v", res.Models)
	}

	// The shield: the SDK's RateLimitError, with Retry-After; the held request still completes.
	if !res.Busy.RateLimit || res.Busy.Status != 429 || res.Busy.RetryAfter == nil || aws.ToString(res.Busy.Code) != "queue_saturated" {
		t.Errorf("the shield's 503 reached the SDK as %+v, want a RateLimitError 429 with Retry-After", res.Busy)
	}
	if res.Busy.HeldBytes == 0 {
		t.Errorf("the request holding the queue place got no audio")
	}

	// SIGTERM (the command's context ending) lets a stream in flight finish.
	type answer struct {
		status int
		n      int
		err    error
	}
	ans := make(chan answer, 1)
	inFlight := make(chan struct{})
	go func() {
		r, err := http.Post(busyBase+"/audio/speech", "application/json", strings.NewReader(`{"input":"Finish me after the signal.","response_format":"pcm"}`))
		close(inFlight) // the response's head has arrived: the stream is in flight
		if err != nil {
			ans <- answer{err: err}
			return
		}
		n, err := io.Copy(io.Discard, r.Body)
		r.Body.Close()
		ans <- answer{r.StatusCode, int(n), err}
	}()
	select {
	case <-inFlight:
	case <-time.After(time.Minute):
		t.Fatal("the gateway sent no response head within a minute")
	}
	stopBusy()
	var a2 answer
	select {
	case a2 = <-ans:
	case <-time.After(time.Minute):
		t.Fatal("the stream in flight at SIGTERM did not end within a minute")
	}
	if a2.err != nil || a2.status != 200 || a2.n != 2*len("Finish me after the signal.")*1440 {
		t.Errorf("the stream in flight at SIGTERM: %+v, want 200 with %d bytes", a2, 2*len("Finish me after the signal.")*1440)
	}
	if err := <-busyDone; err != nil {
		t.Errorf("gateway after SIGTERM: %v", err)
	}
}

func mustJSON(v any) string { b, _ := json.Marshal(v); return string(b) }
