package main

import (
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/models"
)

// post sends a speech request to a gateway's base URL; it returns the status, the body and the error's code.
func postSpeech(t *testing.T, base, auth string) (int, string, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, base+"/audio/speech", strings.NewReader(`{"input":"Where does this go?","voice":"en-us"}`))
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	client := &http.Client{Timeout: attackGuard}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var e struct{ Error openAIError }
	json.Unmarshal(b, &e)
	return resp.StatusCode, string(b), aws.ToString(e.Error.Code)
}

// Over real HTTP, an endpoint that does not exist (on the emulator: SageMaker's message names the account) and
// one that cannot be reached (the SDK's error names the URL and the socket addresses) are 502s whose bodies
// name the failure and the fix, and none of the endpoint's URL, its address or port, the region or the
// account: those reach the gateway's log only.
func TestGatewayErrorBodiesKeepInternalsInTheLog(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	t.Run("missing endpoint", func(t *testing.T) {
		e := emulatortest.Start(t)
		base, log := startGatewayInProcess(t, &gatewayOpts{args: []string{"espeak-ng"}, catalog: cat, listen: "127.0.0.1",
			settings: awsenv.Settings{Local: true, StateDir: e.StateDir}, endpoint: "speech-nowhere", maxStreams: 4})
		status, body, code := postSpeech(t, base, "")
		if status != http.StatusBadGateway || code != "endpoint_unavailable" || !strings.Contains(body, "speech-infra deploy espeak-ng") {
			t.Errorf("%d %s; want 502 endpoint_unavailable saying how to deploy", status, body)
		}
		host := strings.TrimPrefix(e.URL, "http://")
		_, port, _ := net.SplitHostPort(host)
		for _, leak := range []string{e.URL, host, ":" + port, "000000000000", "account", "us-east-1", "emulator at"} {
			if strings.Contains(body, leak) {
				t.Errorf("the body tells the client %q: %s", leak, body)
			}
		}
		if !strings.Contains(log.String(), "000000000000") || !strings.Contains(log.String(), host) {
			t.Errorf("the log lacks SageMaker's message and where the gateway points:\n%s", log)
		}
	})
	t.Run("unreachable endpoint", func(t *testing.T) {
		closed := closedAddr(t)
		awsEnv(t, "http://"+closed)
		base, log := startGatewayInProcess(t, &gatewayOpts{args: []string{"espeak-ng"}, catalog: cat, listen: "127.0.0.1", maxStreams: 4})
		status, body, code := postSpeech(t, base, "")
		if status != http.StatusBadGateway || code != "endpoint_unreachable" || !strings.Contains(body, "could not be reached") {
			t.Errorf("%d %s; want 502 endpoint_unreachable", status, body)
		}
		_, port, _ := net.SplitHostPort(closed)
		for _, leak := range []string{closed, "127.0.0.1", ":" + port, "dial", "connection refused", "us-east-1", "http://"} {
			if strings.Contains(body, leak) {
				t.Errorf("the body tells the client %q: %s", leak, body)
			}
		}
		if !strings.Contains(log.String(), "connection refused") || !strings.Contains(log.String(), closed) {
			t.Errorf("the log lacks the cause:\n%s", log)
		}
	})
}

// The key is the variable's value trimmed of surrounding whitespace: a key exported with a trailing newline
// matches the key clients send. A variable holding only whitespace, or a key with a space or a control
// character inside (which no bearer token carries), is refused at start-up (exit 2) naming the flag and
// the variable. The auth-scheme matches in any case over real HTTP (RFC 9110 section 11.1).
func TestGatewayKeyIsTrimmedAndChecked(t *testing.T) {
	for name, value := range map[string]string{
		"GATEWAY_BLANK_KEY": " \t\n ",
		"GATEWAY_EMPTY_KEY": "",
		"GATEWAY_SPACE_KEY": "0123456789abcdef 0123456789abcdef",
		"GATEWAY_CTRL_KEY":  "0123456789abcdef\x010123456789abcdef",
	} {
		t.Setenv(name, value)
		_, stderr, code := invoke(t, "gateway", "espeak-ng", "--port", "0", "--api-key-env", name)
		if code != 2 || !strings.Contains(stderr, "--api-key-env "+name) {
			t.Errorf("%s=%q: exit %d, stderr %q; want 2 naming --api-key-env %s", name, value, code, stderr, name)
		}
	}

	const key = "0123456789abcdef0123"
	t.Setenv("GATEWAY_PADDED_KEY", "  "+key+"\r\n")
	closed := closedAddr(t)
	awsEnv(t, "http://"+closed)
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	base, _ := startGatewayInProcess(t, &gatewayOpts{args: []string{"espeak-ng"}, catalog: cat, listen: "127.0.0.1", maxStreams: 4, keyEnv: "GATEWAY_PADDED_KEY"})
	for auth, want := range map[string]int{
		"Bearer " + key:          http.StatusOK,
		"bearer " + key:          http.StatusOK,
		"BEARER " + key:          http.StatusOK,
		"Bearer  " + key:         http.StatusOK,
		"Bearer " + key + "\t":   http.StatusOK, // HTTP drops the whitespace around a field value
		"Bearer   " + key + "  ": http.StatusOK,
		"Bearer " + key[1:]:      http.StatusUnauthorized,
		"Basic " + key:           http.StatusUnauthorized,
		"":                       http.StatusUnauthorized,
	} {
		req, _ := http.NewRequest(http.MethodGet, base+"/models", nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := (&http.Client{Timeout: attackGuard}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("Authorization %q: %d, want %d", auth, resp.StatusCode, want)
		}
	}
}

// The connection limit is what the descriptor limit leaves: the limit less the process's files, less one
// upstream connection per stream (or half the rest when --max-streams is more); a --max-conns above it is
// refused (exit 2) naming ulimit -n, and so is a limit that leaves no room.
func TestGatewayConnectionLimitFromTheDescriptorLimit(t *testing.T) {
	for _, c := range []struct {
		nofile  uint64
		streams int
		want    int
	}{
		{128, 8, 128 - gatewayFileReserve - 8},
		{128, 32, 128 - gatewayFileReserve - 32},
		{128, 1024, (128 - gatewayFileReserve) / 2},
		{1 << 20, 1024, 1<<20 - gatewayFileReserve - 1024},
		{1 << 62, 1024, 1<<31 - 1 - gatewayFileReserve - 1024},
		{gatewayFileReserve + 1, 1, 0},
	} {
		if got := connCeiling(c.nofile, c.streams); got != c.want {
			t.Errorf("connCeiling(%d, %d) = %d, want %d", c.nofile, c.streams, got, c.want)
		}
	}
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		nofile   uint64
		maxConns int
		ok       bool
		want     int
	}{
		{128, 0, true, 88},
		{128, 88, true, 88},
		{128, 89, false, 0},
		{gatewayFileReserve + 1, 0, false, 0},
	} {
		o := &gatewayOpts{args: []string{"espeak-ng"}, catalog: cat, listen: "127.0.0.1", maxStreams: 8, maxConns: c.maxConns,
			nofile: func() (uint64, error) { return c.nofile, nil }}
		withGatewayDefaults(o)
		err := o.Validate()
		switch {
		case c.ok && (err != nil || o.maxConns != c.want):
			t.Errorf("nofile %d, --max-conns %d: %v, max %d; want %d", c.nofile, c.maxConns, err, o.maxConns, c.want)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "ulimit -n")):
			t.Errorf("nofile %d, --max-conns %d: %v; want a refusal naming ulimit -n", c.nofile, c.maxConns, err)
		}
	}
	o := &gatewayOpts{args: []string{"espeak-ng"}, catalog: cat, listen: "127.0.0.1", maxStreams: 8,
		nofile: func() (uint64, error) { return 0, errors.New("no getrlimit here") }}
	withGatewayDefaults(o)
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "RLIMIT_NOFILE") {
		t.Errorf("an unreadable limit: %v", err)
	}
	// This process's own limit, through the command line.
	if _, stderr, code := invoke(t, "gateway", "espeak-ng", "--port", "0", "--max-conns", "2000000000"); code != 2 || !strings.Contains(stderr, "--max-conns 2000000000") {
		t.Errorf("--max-conns 2000000000: exit %d, %q", code, stderr)
	}
	for _, args := range [][]string{{"--max-conns", "-1"}, {"--max-conns-per-client", "0"}, {"--body-timeout", "0s"}, {"--write-stall-timeout", "0s"}, {"--read-header-timeout", "-1s"}, {"--idle-timeout", "0s"}} {
		if _, stderr, code := invoke(t, append([]string{"gateway", "espeak-ng", "--port", "0"}, args...)...); code != 2 || !strings.Contains(stderr, args[0]) {
			t.Errorf("%v: exit %d, %q; want 2 naming the flag", args, code, stderr)
		}
	}
}

// --help names every bound the gateway keeps and what a client sees when it is hit, OpenAI's defaults the
// gateway keeps, and its health and metrics routes.
func TestGatewayHelpNamesTheBounds(t *testing.T) {
	stdout, _, code := invoke(t, "gateway", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--read-header-timeout", "--body-timeout", "408", "--write-stall-timeout", "--idle-timeout",
		"--max-conns ", "--max-conns-per-client", "ulimit -n", "closed as soon as it is accepted", "upstream invocation cancelled",
		"--health-cache", "GET /healthz", "GET /metrics", "mp3", "24 kHz", "sagemaker:DescribeEndpoint"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("gateway --help does not mention %q:\n%s", want, stdout)
		}
	}
}
