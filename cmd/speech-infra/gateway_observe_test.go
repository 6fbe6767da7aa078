package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/models"
)

// The body the gateway forwards: OpenAI's defaults and voice names filled in, everything else as sent; a body
// the container would refuse passes untouched, so the refusal is the container's.
func TestGatewayOpenAIRequestBody(t *testing.T) {
	for _, c := range []struct {
		name, engine, in string
		// want is the forwarded body ("" for the body untouched); format the metrics' format label.
		want, format string
	}{
		{"no format: mp3", "espeak", `{"input":"Hi.","voice":"en-us"}`, `{"input":"Hi.","voice":"en-us","response_format":"mp3"}`, "mp3"},
		{"alloy on espeak, no format", "espeak", `{"model":"tts-1","input":"Hi.","voice":"alloy"}`, `{"model":"tts-1","input":"Hi.","voice":"en-us","response_format":"mp3"}`, "mp3"},
		{"alloy on kokoro", "kokoro", `{"input":"Hi.","voice":"alloy","response_format":"opus"}`, `{"input":"Hi.","voice":"af_alloy","response_format":"opus"}`, "opus"},
		{"shimmer on kokoro", "kokoro", `{"input":"Hi.","voice":"shimmer","response_format":"wav"}`, `{"input":"Hi.","voice":"af_sky","response_format":"wav"}`, "wav"},
		{"fable on espeak", "espeak", `{"input":"Hi.","voice":"fable","response_format":"wav"}`, `{"input":"Hi.","voice":"en-gb-x-rp","response_format":"wav"}`, "wav"},
		{"any OpenAI voice on calibration", "calibration", `{"input":"Hi.","voice":"verse","response_format":"wav"}`, `{"input":"Hi.","voice":"calibration","response_format":"wav"}`, "wav"},
		{"the engine's own voice", "kokoro", `{"input":"Hi.","voice":"af_bella","response_format":"wav"}`, "", "wav"},
		{"a kokoro mix", "kokoro", `{"input":"Hi.","voice":"af_bella(2)+af_sky(1)","response_format":"flac"}`, "", "flac"},
		{"pcm: 24 kHz", "espeak", `{"input":"Hi.","response_format":"pcm"}`, `{"input":"Hi.","response_format":"pcm","sample_rate":24000}`, "pcm"},
		{"pcm with its own rate", "espeak", `{"input":"Hi.","response_format":"pcm","sample_rate":16000}`, "", "pcm"},
		{"container shape pcm", "espeak", `{"text":"Hi.","format":"pcm"}`, `{"text":"Hi.","format":"pcm","sample_rate":24000}`, "pcm"},
		{"container shape wav", "espeak", `{"text":"Hi.","format":"wav"}`, "", "wav"},
		{"values keep their bytes", "espeak", "{ \"input\" : \"caf\\u00e9 \\\"q\\\"\",\n \"speed\": 1.50 }", `{"input":"caf\u00e9 \"q\"","speed":1.50,"response_format":"mp3"}`, "mp3"},
		{"aac (not offered): the container refuses", "espeak", `{"input":"Hi.","response_format":"aac"}`, "", "aac"},
		{"a format no one offers", "espeak", `{"input":"Hi.","response_format":"ogg-vorbis-x"}`, "", "other"},
		{"a null format", "espeak", `{"input":"Hi.","response_format":null}`, "", "other"},
		{"not JSON", "espeak", `{"input":"Hi."`, "", "other"},
		{"trailing data", "espeak", `{"input":"Hi."} {}`, "", "other"},
		{"an array", "espeak", `["Hi."]`, "", "other"},
		{"a duplicate key", "espeak", `{"input":"Hi.","voice":"alloy","voice":"alloy"}`, "", "other"},
		{"a case-variant key", "espeak", `{"input":"Hi.","Voice":"alloy","voice":"alloy"}`, "", "other"},
		{"an escaped duplicate", "espeak", `{"input":"Hi.","v\u006fice":"alloy","voice":"alloy"}`, "", "other"},
		{"a voice list", "espeak", `{"voices":true}`, "", "other"},
		{"not UTF-8", "espeak", "{\"input\":\"\xff\"}", "", "other"},
		{"an unknown engine's voice", "", `{"input":"Hi.","voice":"alloy","response_format":"wav"}`, "", "wav"},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, format := openAIRequest([]byte(c.in), c.engine)
			want := c.want
			if want == "" {
				want = c.in
			}
			if string(out) != want || format != c.format {
				t.Errorf("openAIRequest(%s, %q) = %s, %q; want %s, %q", c.in, c.engine, out, format, want, c.format)
			}
		})
	}
	// Every OpenAI voice name maps on every engine.
	for _, engine := range []string{"espeak", "kokoro", "calibration"} {
		for _, v := range []string{"alloy", "ash", "ballad", "coral", "echo", "fable", "onyx", "nova", "sage", "shimmer", "verse", "marin", "cedar"} {
			if openAIVoices[engine][v] == "" {
				t.Errorf("%s: OpenAI's voice %s maps to nothing", engine, v)
			}
		}
	}
}

// recordingRuntime answers every speech invocation with err, keeping the bodies it was sent.
type recordingRuntime struct {
	mu     *sync.Mutex
	bodies *[]string
}

func (f recordingRuntime) InvokeEndpointWithResponseStream(_ context.Context, in *sagemakerruntime.InvokeEndpointWithResponseStreamInput, _ ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error) {
	f.mu.Lock()
	*f.bodies = append(*f.bodies, string(in.Body))
	f.mu.Unlock()
	return nil, modelError(400, `{"error":"invalid_request","field":"voice","message":"refused for the test"}`)
}

func (f recordingRuntime) InvokeEndpoint(context.Context, *sagemakerruntime.InvokeEndpointInput, ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointOutput, error) {
	return nil, errors.New("unused")
}

// countingDescriber is a control plane whose DescribeEndpoint takes delay and answers status, or err.
type countingDescriber struct {
	calls  atomic.Int64
	delay  time.Duration
	mu     sync.Mutex
	status smtypes.EndpointStatus
	err    error
}

func (d *countingDescriber) set(status smtypes.EndpointStatus, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status, d.err = status, err
}

func (d *countingDescriber) DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
	d.calls.Add(1)
	select {
	case <-time.After(d.delay):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.err != nil {
		return nil, d.err
	}
	return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointStatus: d.status}, nil
}

// getHealthz asks url for /healthz: the status and the decoded body.
func getHealthz(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := (&http.Client{Timeout: attackGuard}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatalf("/healthz body: %v", err)
	}
	return resp.StatusCode, body
}

// A flood of /healthz over real HTTP makes one DescribeEndpoint per --health-cache, however many clients
// ask at once; the answer follows the endpoint (200 InService, 503 with the reason when it is Deleting, does
// not exist or cannot be read, without SageMaker's message or the account); /healthz takes no key while
// /metrics does; /metrics counts the probes.
func TestGatewayHealthzIsCachedAndBounded(t *testing.T) {
	d := &countingDescriber{delay: 50 * time.Millisecond, status: smtypes.EndpointStatusInService}
	const cache = 400 * time.Millisecond
	key := "0123456789abcdef0123"
	var logMu sync.Mutex
	var logged []string
	g := newGateway(gatewayConfig{model: "espeak-ng", endpoint: "speech-espeak-ng", where: "AWS (eu-west-3)", maxStreams: 4, key: []byte(key),
		describe: d, healthCache: cache, newClient: func() speechInvoker { return fakeRuntime{errors.New("unused")} },
		logf: func(format string, args ...any) {
			logMu.Lock()
			logged = append(logged, fmt.Sprintf(format, args...))
			logMu.Unlock()
		}})
	srv := httptest.NewServer(g)
	defer srv.Close()

	// 200 clients at once, twice, on a gateway whose cache outlasts the test however slow the machine: one
	// DescribeEndpoint, which every one of them waits for or is answered from.
	long := &countingDescriber{delay: 50 * time.Millisecond, status: smtypes.EndpointStatusInService}
	longSrv := httptest.NewServer(newGateway(gatewayConfig{model: "espeak-ng", endpoint: "speech-espeak-ng", maxStreams: 4,
		describe: long, healthCache: time.Hour, newClient: func() speechInvoker { return fakeRuntime{errors.New("unused")} }}))
	defer longSrv.Close()
	flood := func() map[int]int {
		var mu sync.Mutex
		statuses := map[int]int{}
		var wg sync.WaitGroup
		for range 200 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				resp, err := (&http.Client{Timeout: attackGuard}).Get(longSrv.URL + "/healthz")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}()
		}
		wg.Wait()
		return statuses
	}
	for i := range 2 {
		if s := flood(); s[200] != 200 {
			t.Errorf("200 /healthz on an InService endpoint: %v", s)
		}
		if n := long.calls.Load(); n != 1 {
			t.Errorf("flood %d: 200 /healthz at once made %d DescribeEndpoint calls in all, want 1", i+1, n)
		}
	}

	// A sustained flood: 20 clients asking as fast as they can for 2 s make one call per --health-cache at
	// most (plus the one in flight at the end).
	start, calls0 := time.Now(), d.calls.Load()
	var asked atomic.Int64
	var wg sync.WaitGroup
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < 2*time.Second {
				resp, err := (&http.Client{Timeout: attackGuard}).Get(srv.URL + "/healthz")
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				asked.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if n, most := d.calls.Load()-calls0, int64(elapsed/cache)+1; n > most {
		t.Errorf("%d /healthz in %s made %d DescribeEndpoint calls, more than one per %s (%d)", asked.Load(), elapsed, n, cache, most)
	}
	t.Logf("%d /healthz in %s: %d DescribeEndpoint calls", asked.Load(), elapsed.Round(time.Millisecond), d.calls.Load()-calls0)

	// The endpoint is being deleted: once the cache has passed, 503 with the reason.
	d.set(smtypes.EndpointStatusDeleting, nil)
	time.Sleep(cache + 50*time.Millisecond)
	status, body := getHealthz(t, srv.URL+"/healthz")
	if status != 503 || body["status"] != "unhealthy" || body["endpoint_status"] != "Deleting" || !strings.Contains(fmt.Sprint(body["reason"]), "not InService") {
		t.Errorf("a Deleting endpoint: %d %v; want 503 unhealthy naming the status", status, body)
	}
	// Deleted: SageMaker's ValidationException, whose message names the account.
	d.set("", &smithyErr{code: "ValidationException", msg: `Could not find endpoint "arn:aws:sagemaker:eu-west-3:123456789012:endpoint/speech-espeak-ng".`})
	time.Sleep(cache + 50*time.Millisecond)
	status, body = getHealthz(t, srv.URL+"/healthz")
	if status != 503 || body["endpoint_status"] != nil || !strings.Contains(fmt.Sprint(body["reason"]), "does not exist") || !strings.Contains(fmt.Sprint(body["reason"]), "speech-infra deploy espeak-ng") {
		t.Errorf("a deleted endpoint: %d %v; want 503 saying it does not exist and how to deploy it", status, body)
	}
	// The control plane refuses: 503, the cause in the log only.
	d.set("", &smithyErr{code: "AccessDeniedException", msg: "User arn:aws:iam::123456789012:user/x is not authorized to perform sagemaker:DescribeEndpoint"})
	time.Sleep(cache + 50*time.Millisecond)
	status, body = getHealthz(t, srv.URL+"/healthz")
	if status != 503 || !strings.Contains(fmt.Sprint(body["reason"]), "sagemaker:DescribeEndpoint") {
		t.Errorf("DescribeEndpoint refused: %d %v; want 503 naming the permission", status, body)
	}
	if b, _ := json.Marshal(body); strings.Contains(string(b), "123456789012") || strings.Contains(string(b), "arn:") {
		t.Errorf("/healthz tells the client SageMaker's message: %s", b)
	}
	logMu.Lock()
	if !strings.Contains(strings.Join(logged, "\n"), "AccessDeniedException") {
		t.Errorf("the log lacks the cause: %q", logged)
	}
	logMu.Unlock()
	// Back in service.
	d.set(smtypes.EndpointStatusInService, nil)
	time.Sleep(cache + 50*time.Millisecond)
	if status, body := getHealthz(t, srv.URL+"/healthz"); status != 200 || body["status"] != "ok" {
		t.Errorf("back InService: %d %v", status, body)
	}

	// /metrics needs the key; with it, the probes and the /healthz answers are counted.
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("/metrics without the key: %d, want 401", resp.StatusCode)
	}
	mf := scrapeMetrics(t, srv.URL+"/metrics", key)
	calls := d.calls.Load()
	var probes float64
	for _, r := range []string{"healthy", "unhealthy", "error"} {
		probes += metricValue(mf, "speech_infra_gateway_health_probes_total", map[string]string{"result": r})
	}
	if probes != float64(calls) {
		t.Errorf("/metrics counts %v probes, the control plane saw %d calls", probes, calls)
	}
	if n, want := metricValue(mf, "speech_infra_gateway_requests_total", map[string]string{"route": "/healthz", "status": "200"}), float64(asked.Load()+1); n != want {
		t.Errorf("/metrics counts %v /healthz 200s, want %v", n, want)
	}
	if n := metricValue(mf, "speech_infra_gateway_requests_total", map[string]string{"route": "/metrics", "status": "401"}); n != 1 {
		t.Errorf("/metrics counts %v refused scrapes, want 1", n)
	}
}

// /metrics over real HTTP, parsed by Prometheus's own text parser: speech answers counted by the format asked
// for (mp3 when none; unknown before the body is read) and status, every route by status, any other path as
// "other", the invocations in flight.
func TestGatewayMetricsCountByFormatAndStatus(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	g := newGateway(gatewayConfig{model: "espeak-ng", endpoint: "speech-espeak-ng", engine: "espeak", where: "AWS (eu-west-3)", maxStreams: 4,
		newClient: func() speechInvoker { return recordingRuntime{&mu, &bodies} }})
	srv := httptest.NewServer(g)
	defer srv.Close()
	post := func(body string) int {
		resp, err := http.Post(srv.URL+"/v1/audio/speech", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, b := range []string{`{"input":"a","voice":"alloy"}`, `{"input":"b"}`, `{"input":"c","response_format":"pcm"}`, `{"input":"d","response_format":"ogg\"\n{x}"}`, strings.Repeat("x", maxGatewayBody+1)} {
		post(b)
	}
	for _, p := range []string{"/v1/models", "/v1/models/espeak-ng", "/v1/models/tts-1", "/nowhere/\"quoted\"\n"} {
		resp, err := http.Get(srv.URL + strings.ReplaceAll(strings.ReplaceAll(p, "\"", "%22"), "\n", "%0A"))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	mu.Lock()
	if len(bodies) != 4 || bodies[0] != `{"input":"a","voice":"en-us","response_format":"mp3"}` || bodies[2] != `{"input":"c","response_format":"pcm","sample_rate":24000}` {
		t.Errorf("the container was sent %q", bodies)
	}
	mu.Unlock()

	mf := scrapeMetrics(t, srv.URL+"/metrics", "")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"speech_infra_gateway_speech_requests_total", map[string]string{"format": "mp3", "status": "400"}, 2},
		{"speech_infra_gateway_speech_requests_total", map[string]string{"format": "pcm", "status": "400"}, 1},
		{"speech_infra_gateway_speech_requests_total", map[string]string{"format": "other", "status": "400"}, 1},
		{"speech_infra_gateway_speech_requests_total", map[string]string{"format": "unknown", "status": "413"}, 1},
		{"speech_infra_gateway_requests_total", map[string]string{"route": "/v1/audio/speech", "status": "400"}, 4},
		{"speech_infra_gateway_requests_total", map[string]string{"route": "/v1/models", "status": "200"}, 1},
		{"speech_infra_gateway_requests_total", map[string]string{"route": "/v1/models/{model}", "status": "200"}, 1},
		{"speech_infra_gateway_requests_total", map[string]string{"route": "/v1/models/{model}", "status": "404"}, 1},
		{"speech_infra_gateway_requests_total", map[string]string{"route": "other", "status": "404"}, 1},
		{"speech_infra_gateway_upstream_in_flight", map[string]string{}, 0},
	} {
		if got := metricValue(mf, c.name, c.labels); got != c.want {
			t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
		}
	}
	if n := len(mf["speech_infra_gateway_speech_requests_total"].GetMetric()); n != 4 {
		t.Errorf("%d speech series, want 4 (no label value from a client)", n)
	}
}

// scrapeMetrics reads url with Prometheus's text parser (key, when set, as the bearer key).
func scrapeMetrics(t *testing.T, url, key string) map[string]*dto.MetricFamily {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := (&http.Client{Timeout: attackGuard}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	var p expfmt.TextParser
	mf, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("the Prometheus text parser refuses /metrics: %v", err)
	}
	return mf
}

// metricValue is the value of the series of family name with exactly labels, 0 when there is none.
func metricValue(mf map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	for _, m := range mf[name].GetMetric() {
		if len(m.GetLabel()) != len(labels) {
			continue
		}
		match := true
		for _, l := range m.GetLabel() {
			match = match && labels[l.GetName()] == l.GetValue()
		}
		if !match {
			continue
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue()
		case m.Gauge != nil:
			return m.Gauge.GetValue()
		}
	}
	return 0
}

// mp3Duration walks data as MPEG audio Layer III frames from its first byte to its last, each header valid and
// each frame whole, and returns the seconds of audio they hold.
func mp3Duration(data []byte) (float64, error) {
	bitrates := map[bool][]int{
		true:  {0, 32, 40, 48, 56, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320},
		false: {0, 8, 16, 24, 32, 40, 48, 56, 64, 80, 96, 112, 128, 144, 160},
	}
	rates := map[int][]int{3: {44100, 48000, 32000}, 2: {22050, 24000, 16000}, 0: {11025, 12000, 8000}}
	var seconds float64
	frames := 0
	for off := 0; off < len(data); {
		if len(data)-off < 4 {
			return 0, fmt.Errorf("%d bytes left after %d frames, too few for a header", len(data)-off, frames)
		}
		h := data[off : off+4]
		version, layer := int(h[1]>>3)&3, int(h[1]>>1)&3
		bi, ri, pad := int(h[2]>>4), int(h[2]>>2)&3, int(h[2]>>1)&1
		if h[0] != 0xFF || h[1]&0xE0 != 0xE0 || version == 1 || layer != 1 || bi == 0 || bi == 15 || ri == 3 {
			return 0, fmt.Errorf("no Layer III frame header at byte %d (after %d frames): % x", off, frames, h)
		}
		mpeg1 := version == 3
		rate := rates[version][ri]
		samples, factor := 576, 72
		if mpeg1 {
			samples, factor = 1152, 144
		}
		size := factor*bitrates[mpeg1][bi]*1000/rate + pad
		if off+size > len(data) {
			return 0, fmt.Errorf("frame %d at byte %d is %d bytes, only %d are left", frames, off, size, len(data)-off)
		}
		seconds += float64(samples) / float64(rate)
		frames++
		off += size
	}
	if frames == 0 {
		return 0, errors.New("no frame")
	}
	return seconds, nil
}

// On the emulator: /healthz is 200 while the gateway's endpoint is InService, 503 naming the endpoint and
// saying it does not exist once it is deleted (within --health-cache), and 200 again once it is back.
func TestGatewayHealthzFollowsTheEndpointOnTheEmulator(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	const name = "speech-health"
	emulatortest.Endpoint(t, e, name, emulatortest.InService())
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	base, log := startGatewayInProcess(t, &gatewayOpts{args: []string{"espeak-ng"}, catalog: cat, listen: "127.0.0.1",
		settings: awsenv.Settings{Local: true, StateDir: e.StateDir}, endpoint: name, maxStreams: 4, healthCache: 300 * time.Millisecond})
	url := strings.TrimSuffix(base, "/v1") + "/healthz"
	if status, body := getHealthz(t, url); status != 200 || body["endpoint_status"] != "InService" {
		t.Fatalf("an InService endpoint: %d %v", status, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := e.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	// waitHealthz polls /healthz until it answers want (each answer at most --health-cache old), or the guard.
	waitHealthz := func(want int) map[string]any {
		guard := time.Now().Add(attackGuard)
		for {
			status, body := getHealthz(t, url)
			if status == want {
				return body
			}
			if time.Now().After(guard) {
				t.Fatalf("/healthz still %d %v after %s, want %d\n%s", status, body, attackGuard, want, log)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	body := waitHealthz(503)
	if body["status"] != "unhealthy" || body["endpoint"] != name || !strings.Contains(fmt.Sprint(body["reason"]), "does not exist") && !strings.Contains(fmt.Sprint(body["reason"]), "not InService") {
		t.Errorf("a deleted endpoint: %v; want unhealthy, saying it does not exist or is not InService", body)
	}
	if b, _ := json.Marshal(body); strings.Contains(string(b), "000000000000") || strings.Contains(string(b), e.URL) {
		t.Errorf("/healthz tells the client the account or the emulator's address: %s", b)
	}
	// Back: the same configuration, a new endpoint.
	if _, err := e.SageMaker.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	emulatortest.WaitInService(ctx, t, e.SageMaker, name)
	if body := waitHealthz(200); body["status"] != "ok" {
		t.Errorf("back InService: %v", body)
	}
}
