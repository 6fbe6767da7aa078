package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// TestMain doubles as the emulator process: deploy --local re-executes its own binary (here the test binary)
// with `local serve`.
func TestMain(m *testing.M) {
	// SPEECH_INFRA_TEST_RUN_CLI makes it the CLI itself, for tests that run several commands as processes.
	if (len(os.Args) > 2 && os.Args[1] == "local" && os.Args[2] == "serve") || os.Getenv("SPEECH_INFRA_TEST_RUN_CLI") == "1" {
		os.Exit(exitcode.Report(os.Stderr, "speech-infra", run(context.Background(), os.Args, os.Stdout, os.Stderr)))
	}
	os.Exit(m.Run())
}

func invoke(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	code := exitcode.Report(&errOut, "speech-infra", run(ctx, append([]string{"speech-infra"}, args...), &out, &errOut))
	return out.String(), errOut.String(), code
}

func TestUsageExitsTwo(t *testing.T) {
	for _, args := range [][]string{
		{"deploy"},
		{"deploy", "no-such-model", "--local"},
		{"deploy", "espeak-ng", "--format", "json"},
		{"deploy", "espeak-ng", "--local", "--dry-run"},
		{"destroy", "espeak-ng", "kokoro-82m", "--local"},
		{"deploy", "--bogus"},
	} {
		if _, stderr, code := invoke(t, args...); code != 2 {
			t.Errorf("%v: exit %d (stderr %q), want 2", args, code, stderr)
		}
	}
}

// deploy prints the endpoint and the variables, an SDK program configured only by those
// variables describes the endpoint and streams speech, destroy removes it.
func TestDeployLocalEspeak(t *testing.T) {
	dir := t.TempDir()
	bin := emulatortest.ContainerBinary(t)
	state := filepath.Join(dir, "state")
	port := freePort(t)
	t.Setenv("SPEECH_INFRA_STATE_DIR", state)
	t.Setenv("SPEECH_INFRA_PORT", port)
	t.Setenv("SPEECH_CONTAINER_BIN", bin)
	t.Cleanup(func() { invoke(t, "local", "stop") })

	// No --plan: the default path holds none, so the endpoint runs without autoscaling.
	out, stderr, code := invoke(t, "deploy", "espeak-ng", "--local")
	if code != 0 {
		t.Fatalf("deploy: exit %d\n%s%s", code, out, stderr)
	}
	// stdout is data alone, so `eval "$(speech-infra deploy espeak-ng --local)"` works; the report is on stderr.
	if !strings.Contains(stderr, "endpoint   speech-espeak-ng (InService") || !strings.Contains(stderr, "autoscaling off: no plan") || !onlyExports(out) {
		t.Errorf("deploy output:\n%s\nstderr:\n%s", out, stderr)
	}
	for _, line := range strings.Split(out, "\n") {
		if k, v, ok := strings.Cut(strings.TrimPrefix(line, "export "), "="); ok && strings.HasPrefix(line, "export ") {
			t.Setenv(k, v)
		}
	}
	if os.Getenv("AWS_ENDPOINT_URL") != "http://127.0.0.1:"+port {
		t.Fatalf("AWS_ENDPOINT_URL = %q from the deploy output, want the emulator on port %s", os.Getenv("AWS_ENDPOINT_URL"), port)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A user's SDK program configured only by the printed variables: the default configuration chain, with the
	// project's HTTP client that works around aws/aws-sdk-go-v2#2737 for response streams (cloud.HTTPClient).
	cfg, err := cloud.LoadConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	d, err := sagemaker.NewFromConfig(cfg).DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-espeak-ng")})
	if err != nil || d.EndpointStatus != "InService" || d.ProductionVariants[0].DesiredInstanceCount == nil {
		t.Fatalf("DescribeEndpoint = %+v, %v", d, err)
	}
	res, err := bench.InvokeStream(ctx, sagemakerruntime.NewFromConfig(cfg), &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String("speech-espeak-ng"), ContentType: aws.String("application/json"), Body: []byte(`{"text":"Deployed locally.","format":"wav"}`),
	}, bench.StreamOptions{Keep: true})
	if audio := res.Payload; err != nil || len(audio) < 1000 || string(audio[:4]) != "RIFF" {
		t.Fatalf("streamed %d bytes starting %q, err %v; want a WAV", len(audio), audio[:min(4, len(audio))], err)
	}

	// The endpoint is described on stderr; stdout holds only the export lines, for eval.
	if out, stderr, code := invoke(t, "local", "status"); code != 0 || !strings.Contains(stderr, "speech-espeak-ng InService, 1/1 instances") || !onlyExports(out) {
		t.Errorf("local status: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	out, stderr, code = invoke(t, "local", "status", "--format", "json")
	var st localStatus
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil || !st.Running || len(st.Endpoints) != 1 ||
		st.Endpoints[0] != (endpointStatus{Name: "speech-espeak-ng", Status: "InService", CurrentInstances: 1, DesiredInstances: 1, ProductionVariant: "AllTraffic"}) ||
		st.URL != "http://127.0.0.1:"+port || len(st.Env) != 5 || st.Env[0] != (envVar{"AWS_ENDPOINT_URL", st.URL}) {
		t.Errorf("local status --format json: exit %d, %v, %+v\nstdout:\n%s\nstderr:\n%s", code, err, st, out, stderr)
	}
	if out, stderr, code := invoke(t, "destroy", "espeak-ng", "--local"); code != 0 || !strings.Contains(out, "removed endpoint speech-espeak-ng") {
		t.Fatalf("destroy: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := sagemaker.NewFromConfig(cfg).DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-espeak-ng")}); err == nil {
		t.Errorf("the endpoint still exists after destroy")
	}
	if out, stderr, code := invoke(t, "local", "stop"); code != 0 || !strings.Contains(out, "emulator stopped") {
		t.Errorf("local stop: exit %d\n%s%s", code, out, stderr)
	}
	if out, stderr, _ := invoke(t, "local", "status"); !strings.Contains(stderr, "not running") || out != "" {
		t.Errorf("status after stop:\nstdout:\n%s\nstderr:\n%s", out, stderr)
	}
}

// onlyExports says whether out is one or more `export NAME=value` lines and nothing else.
func onlyExports(out string) bool {
	if out == "" || !strings.HasSuffix(out, "\n") {
		return false
	}
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if !exportLine.MatchString(line) {
			return false
		}
	}
	return true
}

var exportLine = regexp.MustCompile(`^export [A-Z_]+=\S+$`)

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}
