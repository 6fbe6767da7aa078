package emulator_test

// Conformance of the runtime, the logs and the wire shapes: each case drives
// the emulator through the real aws-sdk-go-v2 clients (or boto3, or raw HTTP where the case is about the raw
// protocol) and cites, next to it, the AWS documentation it checks.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logstypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go/middleware"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// python3Boto3 returns the python3 on PATH when it can import boto3. Under CI=true a missing one fails the
// test; elsewhere the test is skipped with the reason.
func python3Boto3(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("python3")
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if out, ierr := exec.CommandContext(ctx, bin, "-c", "import boto3").CombinedOutput(); ierr != nil {
			err = fmt.Errorf("%s cannot import boto3: %v: %s", bin, ierr, out)
		}
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("python3 with boto3 is needed (%v): CI installs it; install it (pip install boto3) and re-run", err)
		}
		t.Skipf("python3 with boto3 is needed (%v): install it (pip install boto3) to run this test; skipped outside CI, under CI=true this fails", err)
	}
	return bin
}

// boto3ScriptWhenReady runs a Python script with boto3 against the emulator, configured only by the variables
// cloud.LocalEnv prints (no shared files, no retries), and decodes the one JSON object it prints. The script
// prints "ready" on stderr once boto3 is loaded and its client made, then waits for a line on stdin before
// its call: ready runs between the two, so that what it sets up (a held queue place) is in place when the
// call comes, however long Python took to start. With a nil ready the line is sent at once.
func boto3ScriptWhenReady(ctx context.Context, t *testing.T, r *emulatortest.Emulator, script string, ready func(), args ...string) map[string]any {
	t.Helper()
	bin := python3Boto3(t)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"-c", script}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	dir := t.TempDir()
	cmd.Env = append(cmd.Env,
		"AWS_CONFIG_FILE="+filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_MAX_ATTEMPTS=1",
	)
	for _, kv := range cloud.LocalEnv(r.URL, r.Key) {
		cmd.Env = append(cmd.Env, kv[0]+"="+kv[1])
	}
	var out strings.Builder
	errOut := &readyWriter{ready: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &out, errOut
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("boto3 script: %v", err)
	}
	if ready != nil {
		select {
		case <-errOut.ready:
			ready()
		case <-ctx.Done():
		}
	}
	io.WriteString(stdin, "go\n")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("boto3 script: %v\nstdout: %s\nstderr: %s", err, out.String(), errOut.String())
	}
	var res map[string]any
	if err := json.Unmarshal([]byte(out.String()), &res); err != nil {
		t.Fatalf("boto3 script printed %q, not one JSON object: %v\nstderr: %s", out.String(), err, errOut.String())
	}
	return res
}

// readyWriter keeps a script's stderr and closes ready when a line "ready" has come.
type readyWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	ready chan struct{}
	seen  bool
}

func (w *readyWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	if !w.seen && regexp.MustCompile(`(?m)^ready$`).MatchString(w.b.String()) {
		w.seen = true
		close(w.ready)
	}
	return len(p), nil
}

func (w *readyWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// boto3StreamScript, once its client is made and a line has come on stdin (boto3ScriptWhenReady), invokes
// argv[1] with a response stream and prints what came back: the exception botocore
// raised (its code, HTTP status, modeled members and request id), or the number of payload parts.
const boto3StreamScript = `
import json, sys
import boto3, botocore.exceptions
c = boto3.client("sagemaker-runtime")
print("ready", file=sys.stderr, flush=True)
sys.stdin.readline()
out = {}
try:
    r = c.invoke_endpoint_with_response_stream(EndpointName=sys.argv[1], ContentType="application/json", Body=sys.argv[2].encode())
    out["parts"] = sum(1 for ev in r["Body"] if "PayloadPart" in ev)
    out["raised"] = None
except c.exceptions.ModelError as e:
    out["raised"] = "ModelError"
    out["code"] = e.response["Error"]["Code"]
    out["http"] = e.response["ResponseMetadata"]["HTTPStatusCode"]
    out["requestId"] = e.response["ResponseMetadata"].get("RequestId", "")
    out["OriginalStatusCode"] = e.response.get("OriginalStatusCode")
    out["OriginalMessage"] = e.response.get("OriginalMessage")
    out["LogStreamArn"] = e.response.get("LogStreamArn")
    out["Message"] = e.response.get("Message")
except botocore.exceptions.BotoCoreError as e:
    out["raised"] = type(e).__name__ + ": " + str(e)
except botocore.exceptions.ClientError as e:
    out["raised"] = type(e).__name__ + ": " + str(e)
print(json.dumps(out))
`

// streamBody is an InvokeEndpointWithResponseStream input for text.
func streamBody(name, text string) *sagemakerruntime.InvokeEndpointWithResponseStreamInput {
	return &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String(name), ContentType: aws.String("application/json"),
		Body: []byte(fmt.Sprintf(`{"text":%q,"format":"wav"}`, text)),
	}
}

// TestConformanceStreamErrors: a container that refuses a response-stream invocation before streaming (the
// queue gate's 503 queue_saturated, a 400) is answered with ModelError (HTTP 424), not with an HTTP 200 stream;
// ModelStreamError is reserved for failures once the stream runs (StreamBroken here). qmax tells a shed
// request from a broken stream by it. Checked through the Go SDK (bench.InvokeStream's typed errors) and
// through boto3.
func TestConformanceStreamErrors(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-shed"
	// One admitted request at most; each segment (one per sentence) computes for 700 ms.
	emulatortest.Endpoint(t, r, name, emulatortest.InService(), emulatortest.Env(map[string]string{
		"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "700", "QUEUE_MAX_DEPTH": "1",
	}))

	// hold starts a stream of many sentences on clients of its own and returns once its first payload part
	// arrived (the container admitted it and holds its only queue place for seconds), with a function that
	// waits for the stream's end and returns its error.
	hold := func(t *testing.T) (wait func() error, pid int) {
		t.Helper()
		c := r.NewClients()
		pid, _ = r.InstancePID(t, name)
		out, err := c.Runtime.InvokeEndpointWithResponseStream(ctx, streamBody(name, strings.Repeat("Hold the only place. ", 8)))
		if err != nil {
			t.Fatalf("the holding stream was refused: %v", err)
		}
		s := out.GetStream()
		select {
		case _, ok := <-s.Events():
			if !ok {
				s.Close()
				t.Fatalf("the holding stream ended before its first part: %v", s.Err())
			}
		case <-time.After(30 * time.Second):
			s.Close()
			t.Fatalf("the holding stream sent nothing within 30 s")
		}
		var once sync.Once
		var werr error
		return func() error {
			once.Do(func() {
				for range s.Events() {
				}
				werr = s.Err()
				s.Close()
			})
			return werr
		}, pid
	}

	// API reference, InvokeEndpointWithResponseStream, Errors: "ModelError: Model (owned by the customer in the
	// container) returned 4xx or 5xx error code." (botocore's model: ModelError, httpStatusCode 424, members
	// Message, OriginalStatusCode, OriginalMessage, LogStreamArn).
	t.Run("saturated instance: ModelError 503 through the Go SDK and bench", func(t *testing.T) {
		wait, _ := hold(t)
		defer wait()
		_, err := bench.InvokeStream(ctx, r.Runtime, streamBody(name, "Shed me."), bench.StreamOptions{})
		var me *bench.ModelError
		if !errors.As(err, &me) || me.OriginalStatusCode != 503 || !strings.Contains(me.OriginalMessage, "queue_saturated") {
			t.Fatalf("stream on a saturated instance: %v, want a *bench.ModelError with OriginalStatusCode 503 and the container's queue_saturated answer", err)
		}
		if !strings.HasPrefix(me.LogStreamArn, "arn:aws:logs:") || !strings.Contains(me.LogStreamArn, emulator.LogGroup(name)+":log-stream:AllTraffic/") {
			t.Errorf("LogStreamArn = %q, want the instance's log stream ARN in %s", me.LogStreamArn, emulator.LogGroup(name))
		}
		var mse *bench.ModelStreamError
		if errors.As(err, &mse) {
			t.Errorf("a shed request is also a ModelStreamError: %v", err)
		}
		var re *awshttp.ResponseError
		if !errors.As(err, &re) || re.HTTPStatusCode() != http.StatusFailedDependency {
			t.Errorf("HTTP status of the refusal: %v, want 424", err)
		}
		if err := wait(); err != nil {
			t.Errorf("the holding stream failed: %v", err)
		}
	})

	// boto3 raises ModelError with OriginalStatusCode 503.
	t.Run("saturated instance: boto3 raises ModelError 503", func(t *testing.T) {
		// The place is taken once boto3 is loaded: Python's start-up (seconds on a loaded machine) must not
		// outlast the hold.
		var wait func() error
		defer func() {
			if wait != nil {
				wait()
			}
		}()
		got := boto3ScriptWhenReady(ctx, t, r, boto3StreamScript, func() { wait, _ = hold(t) }, name, `{"text":"Shed me too.","format":"wav"}`)
		if got["raised"] != "ModelError" || got["code"] != "ModelError" || got["http"] != 424.0 || got["OriginalStatusCode"] != 503.0 ||
			!strings.Contains(fmt.Sprint(got["OriginalMessage"]), "queue_saturated") || !strings.Contains(fmt.Sprint(got["LogStreamArn"]), ":log-stream:AllTraffic/") {
			t.Errorf("boto3 on a saturated instance: %v, want ModelError (HTTP 424) with OriginalStatusCode 503, the queue_saturated answer and the log stream ARN", got)
		}
		// The modeled Message member, in SageMaker's form for a 5xx: "Received server error (503) from primary
		// with message ...".
		if m, _ := got["Message"].(string); !strings.HasPrefix(m, "Received server error (503) from primary with message") {
			t.Errorf("boto3 ModelError Message = %q, want \"Received server error (503) from primary with message ...\"", m)
		}
		if id, _ := got["requestId"].(string); id == "" {
			t.Errorf("boto3 saw no request id (x-amzn-RequestId) on the ModelError: %v", got)
		}
	})

	// Same sentence: a 4xx from the container is a ModelError too, with the container's status.
	t.Run("bad input: ModelError 400", func(t *testing.T) {
		_, err := bench.InvokeStream(ctx, r.Runtime, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
			EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: []byte(`{"format":"wav"}`),
		}, bench.StreamOptions{})
		var me *bench.ModelError
		if !errors.As(err, &me) || me.OriginalStatusCode != 400 || !strings.Contains(me.OriginalMessage, "invalid_request") {
			t.Fatalf("stream without text: %v, want a *bench.ModelError with OriginalStatusCode 400", err)
		}
		// The message has SageMaker's form: "Received client error (400) from primary with message ..."
		// (as SageMaker answers, e.g. aws-samples/amazon-sagemaker-custom-recommender-system#2).
		if !strings.HasPrefix(me.Message, "Received client error (400) from primary with message") {
			t.Errorf("ModelError message = %q, want SageMaker's \"Received client error (400) from primary with message ...\"", me.Message)
		}
	})

	// API reference, ModelStreamError: "An error occurred while streaming the response body. This error can
	// have the following error codes: ... StreamBroken: The Transmission Control Protocol (TCP) connection
	// between the client and the model was reset or closed." The container dies mid-stream: StreamBroken, an
	// exception event on a stream that had started.
	t.Run("container dies mid-stream: ModelStreamError StreamBroken", func(t *testing.T) {
		wait, pid := hold(t)
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatalf("kill the instance: %v", err)
		}
		err := wait()
		var se *rttypes.ModelStreamError
		if !errors.As(err, &se) || aws.ToString(se.ErrorCode_) != "StreamBroken" {
			t.Fatalf("stream whose container died: %v, want ModelStreamError StreamBroken", err)
		}
	})
}

// requestIDOf returns the request id the SDK read from a result's metadata.
func requestIDOf(md middleware.Metadata) string {
	id, _ := awsmiddleware.GetRequestIDMetadata(md)
	return id
}

// errRequestID returns the request id the SDK read from an error response.
func errRequestID(err error) string {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.ServiceRequestID()
	}
	return ""
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestConformanceRequestID: every answer of every protocol carries a request id in x-amzn-RequestId, a new one
// per request, on successes and on errors alike.
//
// AWS WAF Developer Guide, "HTTP responses" (an awsJson1_1 service; the header is common to AWS's JSON
// protocols): "x-amzn-RequestId: A value created by AWS WAF or Shield Advanced that uniquely identifies your
// request". Its error example, "HTTP/1.1 400 Bad Request x-amzn-RequestId: b0e91dc8-3807-11e2-83c6-5912bf8ad066
// x-amzn-ErrorType: ValidationException ... {"message":"1 validation error detected: ..."}", also shows the
// id travels in the header, not in the JSON error body.
func TestConformanceRequestID(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.Clients
	ctx := ctxFor(t, time.Minute)
	// stranger signs with an access key id the emulator does not know: its calls are refused.
	stranger := emulatortest.NewClients(r.URL, cloud.LocalCredentials{AccessKeyID: emulator.AccessKeyPrefix + emulator.RandomToken(16), SecretAccessKey: r.Key.SecretAccessKey})
	seen := map[string]string{}
	check := func(t *testing.T, what, id string) {
		t.Helper()
		if !uuidPattern.MatchString(id) {
			t.Errorf("%s: request id %q, want a UUID in x-amzn-RequestId", what, id)
			return
		}
		if prev, dup := seen[id]; dup {
			t.Errorf("%s: request id %s was already given to %s", what, id, prev)
		}
		seen[id] = what
	}
	for _, tc := range []struct {
		name string
		call func() (middleware.Metadata, error)
		// wantErr: the call is an error answer (its id comes from the error).
		wantErr bool
	}{
		{"SageMaker (awsJson1_1) ListEndpoints", func() (middleware.Metadata, error) {
			out, err := c.SageMaker.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}, false},
		{"SageMaker (awsJson1_1) DescribeEndpoint of a missing endpoint", func() (middleware.Metadata, error) {
			_, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-none")})
			return middleware.Metadata{}, err
		}, true},
		{"Application Auto Scaling (awsJson1_1) DescribeScalableTargets", func() (middleware.Metadata, error) {
			out, err := c.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}, false},
		{"CloudWatch (rpcv2Cbor) DescribeAlarms", func() (middleware.Metadata, error) {
			out, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
			if err != nil {
				return middleware.Metadata{}, err
			}
			return out.ResultMetadata, nil
		}, false},
		{"CloudWatch (rpcv2Cbor) DescribeAlarms with an unknown access key", func() (middleware.Metadata, error) {
			_, err := stranger.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
			return middleware.Metadata{}, err
		}, true},
		{"CloudWatch Logs (awsJson1_1) DescribeLogStreams of a missing group", func() (middleware.Metadata, error) {
			_, err := c.Logs.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String("/aws/sagemaker/Endpoints/speech-none")})
			return middleware.Metadata{}, err
		}, true},
		{"SageMaker Runtime (restJson1) InvokeEndpoint of a missing endpoint", func() (middleware.Metadata, error) {
			_, err := c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String("speech-none"), Body: []byte(`{}`)})
			return middleware.Metadata{}, err
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			md, err := tc.call()
			switch {
			case tc.wantErr && err == nil:
				t.Fatalf("succeeded, want an error answer")
			case tc.wantErr:
				check(t, tc.name, errRequestID(err))
			case err != nil:
				t.Fatalf("%v", err)
			default:
				check(t, tc.name, requestIDOf(md))
			}
		})
	}

	// CloudWatch over awsJson1_0 (what botocore speaks), a refused signature and an unknown operation, raw.
	for _, tc := range []struct {
		name, target, contentType, auth string
		status                          int
	}{
		{"CloudWatch (awsJson1_0) DescribeAlarms", "GraniteServiceVersion20100801.DescribeAlarms", "application/x-amz-json-1.0", sigV4Header(r.Key.AccessKeyID, "monitoring"), http.StatusOK},
		{"unsigned request (MissingAuthenticationToken)", "SageMaker.ListEndpoints", emulator.ContentTypeJSON11, "", http.StatusForbidden},
		{"unknown operation", "SageMaker.NoSuchOperation", emulator.ContentTypeJSON11, sigV4Header(r.Key.AccessKeyID, "sagemaker"), http.StatusBadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, r.URL+"/", strings.NewReader("{}"))
			req.Header.Set("X-Amz-Target", tc.target)
			req.Header.Set("Content-Type", tc.contentType)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("POST %s: %v", tc.target, err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d", resp.StatusCode, tc.status)
			}
			check(t, tc.name, resp.Header.Get("x-amzn-RequestId"))
		})
	}
}

// writeLogStreams writes n log streams of the group into the state directory the way the emulator keeps them
// (<dir>/logs/<group>/<stream>.jsonl, names path-escaped, one {"t","m"} event a line), before it starts: stream
// i is named AllTraffic/s<i, 2 digits> and its one event is at base+(n-i) seconds, so ordering by
// LastEventTime reverses ordering by name.
func writeLogStreams(t *testing.T, dir, group string, n int, base time.Time) {
	t.Helper()
	gdir := filepath.Join(dir, "logs", url.PathEscape(group))
	if err := os.MkdirAll(gdir, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		stream := fmt.Sprintf("AllTraffic/s%02d", i)
		var lines []string
		for j := range 3 {
			b, _ := json.Marshal(map[string]any{"t": base.Add(time.Duration(n-i)*time.Second + time.Duration(j)*time.Millisecond).UnixMilli(), "m": fmt.Sprintf("line %d of %s", j, stream)})
			lines = append(lines, string(b))
		}
		if err := os.WriteFile(filepath.Join(gdir, url.PathEscape(stream)+".jsonl"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestConformanceLogs: the CloudWatch Logs operations validate their inputs as botocore's model constrains
// them and page as the API reference says.
func TestConformanceLogs(t *testing.T) {
	dir := t.TempDir()
	const group = "/aws/sagemaker/Endpoints/speech-logs"
	const streams = 55
	base := time.Now().Add(-time.Hour).Truncate(time.Second)
	writeLogStreams(t, dir, group, streams, base)
	r := emulatortest.Start(t, emulatortest.StateDir(dir))
	c := r.Logs
	ctx := ctxFor(t, time.Minute)
	g := aws.String(group)
	first := aws.String("AllTraffic/s00")

	// Inputs AWS refuses with InvalidParameterException (the only client error botocore's model lists for
	// DescribeLogStreams, GetLogEvents and FilterLogEvents).
	for _, tc := range []struct {
		name string
		// doc is the sentence of the API reference (or the constraint of botocore's model) the case checks.
		doc  string
		call func() error
	}{
		{"DescribeLogStreams orderBy LastEventTime with a prefix",
			`orderBy: "If you order the results by event time, you cannot specify the logStreamNamePrefix parameter."`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, OrderBy: logstypes.OrderByLastEventTime, LogStreamNamePrefix: aws.String("AllTraffic/")})
				return err
			}},
		{"DescribeLogStreams limit 51",
			`limit: "The maximum number of items returned. If you don't specify a value, the default is up to 50 items." (model: DescribeLimit, min 1, max 50)`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, Limit: aws.Int32(51)})
				return err
			}},
		{"DescribeLogStreams limit 0", `model: DescribeLimit, min 1`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, Limit: aws.Int32(0)})
				return err
			}},
		{"DescribeLogStreams orderBy outside its enum", `model: OrderBy, enum [LogStreamName, LastEventTime]`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, OrderBy: "CreationTime"})
				return err
			}},
		{"DescribeLogStreams empty prefix", `model: logStreamNamePrefix is a LogStreamName, min 1`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, LogStreamNamePrefix: aws.String("")})
				return err
			}},
		{"DescribeLogStreams prefix with a colon", `model: LogStreamName, pattern [^:*]*`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, LogStreamNamePrefix: aws.String("All:Traffic")})
				return err
			}},
		{"DescribeLogStreams both group name and identifier",
			`logGroupName: "You must include either logGroupIdentifier or logGroupName, but not both."`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, LogGroupIdentifier: g})
				return err
			}},
		{"DescribeLogStreams neither group name nor identifier",
			`"You must include one of these two parameters, but you can't include both."`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{})
				return err
			}},
		{"DescribeLogStreams group name outside its pattern", `model: LogGroupName, pattern [\.\-_/#A-Za-z0-9]+`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String("/aws/sagemaker/Endpoints/bad name")})
				return err
			}},
		{"DescribeLogStreams a token it never issued",
			`nextToken: "The token for the next set of items to return. (You received this token from a previous call.)"`,
			func() error {
				_, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, NextToken: aws.String("bogus")})
				return err
			}},
		{"GetLogEvents limit 10001",
			`limit: "If you don't specify a limit, the default is as many log events as can fit in a response size of 1 MB (up to 10,000 log events)." (model: EventsLimit, min 1, max 10000)`,
			func() error {
				_, err := c.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{LogGroupName: g, LogStreamName: first, Limit: aws.Int32(10001)})
				return err
			}},
		{"GetLogEvents negative startTime", `model: Timestamp, min 0`,
			func() error {
				_, err := c.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{LogGroupName: g, LogStreamName: first, StartTime: aws.Int64(-1)})
				return err
			}},
		{"GetLogEvents a forward token past the end", `nextToken: "(You received this token from a previous call.)"`,
			func() error {
				_, err := c.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{LogGroupName: g, LogStreamName: first, NextToken: aws.String("f/4"), StartFromHead: aws.Bool(true)})
				return err
			}},
		{"GetLogEvents a token of no direction", `nextToken: "(You received this token from a previous call.)"`,
			func() error {
				_, err := c.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{LogGroupName: g, LogStreamName: first, NextToken: aws.String("x/1")})
				return err
			}},
		{"GetLogEvents a token the emulator never writes (leading zero)", `nextToken: "(You received this token from a previous call.)"`,
			func() error {
				_, err := c.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{LogGroupName: g, LogStreamName: first, NextToken: aws.String("b/01")})
				return err
			}},
		{"FilterLogEvents both stream names and a prefix",
			`logStreamNames: "If you specify a value for both logStreamNames and logStreamNamePrefix, the action returns an InvalidParameterException error."`,
			func() error {
				_, err := c.FilterLogEvents(ctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: g, LogStreamNames: []string{"AllTraffic/s00"}, LogStreamNamePrefix: aws.String("AllTraffic/")})
				return err
			}},
		{"FilterLogEvents limit 0", `model: EventsLimit, min 1`,
			func() error {
				_, err := c.FilterLogEvents(ctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: g, Limit: aws.Int32(0)})
				return err
			}},
		{"FilterLogEvents 101 stream names", `model: InputLogStreamNames, min 1, max 100`,
			func() error {
				names := make([]string, 101)
				for i := range names {
					names[i] = fmt.Sprintf("AllTraffic/s%03d", i)
				}
				_, err := c.FilterLogEvents(ctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: g, LogStreamNames: names})
				return err
			}},
		{"FilterLogEvents a token it never issued", `nextToken: "The token for the next set of events to return. (You received this token from a previous call.)"`,
			func() error {
				_, err := c.FilterLogEvents(ctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: g, NextToken: aws.String("bogus")})
				return err
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ipe *logstypes.InvalidParameterException
			if err := tc.call(); !errors.As(err, &ipe) {
				t.Errorf("%v, want InvalidParameterException (%s)", err, tc.doc)
			}
		})
	}

	// DescribeLogStreams pages. .NET SDK reference, DescribeLogStreams: "By default, this operation returns up to
	// 50 log streams. If there are more log streams to list, the response would contain a nextToken value in
	// the response body. You can also limit the number of log streams returned in the response by specifying
	// the limit parameter in the request."
	names := func(out *cloudwatchlogs.DescribeLogStreamsOutput) []string {
		var n []string
		for _, s := range out.LogStreams {
			n = append(n, aws.ToString(s.LogStreamName))
		}
		return n
	}
	want := func(order []int) []string {
		var n []string
		for _, i := range order {
			n = append(n, fmt.Sprintf("AllTraffic/s%02d", i))
		}
		return n
	}
	ascending, descending := make([]int, streams), make([]int, streams)
	for i := range streams {
		ascending[i], descending[i] = i, streams-1-i
	}
	t.Run("DescribeLogStreams: 50 a page by default, then the rest", func(t *testing.T) {
		out, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g})
		if err != nil || len(out.LogStreams) != 50 || out.NextToken == nil {
			t.Fatalf("first page: %d streams, token %v, %v; want 50 and a nextToken", len(out.LogStreams), out.NextToken, err)
		}
		rest, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, NextToken: out.NextToken})
		if err != nil || len(rest.LogStreams) != 5 || rest.NextToken != nil {
			t.Fatalf("second page: %d streams, token %v, %v; want the last 5 and no nextToken", len(rest.LogStreams), rest.NextToken, err)
		}
		if got := append(names(out), names(rest)...); strings.Join(got, ",") != strings.Join(want(ascending), ",") {
			t.Errorf("pages = %v, want every stream once in name order", got)
		}
	})
	for _, tc := range []struct {
		name  string
		in    cloudwatchlogs.DescribeLogStreamsInput
		order []int
	}{
		{"by name", cloudwatchlogs.DescribeLogStreamsInput{}, ascending},
		{"by name, descending", cloudwatchlogs.DescribeLogStreamsInput{Descending: aws.Bool(true)}, descending},
		// Stream i's last event is the later the smaller i is.
		{"by last event time", cloudwatchlogs.DescribeLogStreamsInput{OrderBy: logstypes.OrderByLastEventTime}, descending},
		{"by last event time, descending", cloudwatchlogs.DescribeLogStreamsInput{OrderBy: logstypes.OrderByLastEventTime, Descending: aws.Bool(true)}, ascending},
	} {
		t.Run("DescribeLogStreams: limit 7 pages "+tc.name, func(t *testing.T) {
			in := tc.in
			in.LogGroupName, in.Limit = g, aws.Int32(7)
			p := cloudwatchlogs.NewDescribeLogStreamsPaginator(c, &in)
			var got []string
			pages := 0
			for p.HasMorePages() && pages < 20 {
				out, err := p.NextPage(ctx)
				if err != nil {
					t.Fatalf("page %d: %v", pages+1, err)
				}
				if len(out.LogStreams) > 7 {
					t.Errorf("page %d has %d streams, more than the limit 7", pages+1, len(out.LogStreams))
				}
				got = append(got, names(out)...)
				pages++
			}
			if pages != 8 || strings.Join(got, ",") != strings.Join(want(tc.order), ",") {
				t.Errorf("%d pages of %v, want 8 pages of every stream once in order %v", pages, got, want(tc.order))
			}
		})
	}
	t.Run("DescribeLogStreams: a token continues only the request it came from", func(t *testing.T) {
		out, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, Limit: aws.Int32(2)})
		if err != nil || out.NextToken == nil {
			t.Fatalf("first page: %v, %v", out, err)
		}
		var ipe *logstypes.InvalidParameterException
		if _, err := c.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: g, NextToken: out.NextToken, Descending: aws.Bool(true)}); !errors.As(err, &ipe) {
			t.Errorf("the token with another order: %v, want InvalidParameterException", err)
		}
	})

	// The AWS CLI pages with the same tokens: --page-size 1 still lists every stream, --max-items 1 lists one
	// and a NextToken to continue.
	t.Run("AWS CLI describe-log-streams pages", func(t *testing.T) {
		out := mustAWS(ctx, t, r, "logs", "describe-log-streams", "--log-group-name", group, "--page-size", "9", "--output", "json")
		var all struct {
			LogStreams []struct{ LogStreamName string }
		}
		if err := json.Unmarshal([]byte(out), &all); err != nil || len(all.LogStreams) != streams {
			t.Errorf("describe-log-streams --page-size 9 listed %d streams (%v), want %d", len(all.LogStreams), err, streams)
		}
		out = mustAWS(ctx, t, r, "logs", "describe-log-streams", "--log-group-name", group, "--max-items", "1", "--output", "json")
		var page struct {
			LogStreams []struct{ LogStreamName string }
			NextToken  string
		}
		if err := json.Unmarshal([]byte(out), &page); err != nil || len(page.LogStreams) != 1 || page.LogStreams[0].LogStreamName != "AllTraffic/s00" || page.NextToken == "" {
			t.Errorf("describe-log-streams --max-items 1 = %s (%v), want AllTraffic/s00 and a NextToken", out, err)
		}
	})

	// GetLogEvents pages. API reference: "As long as the nextBackwardToken or nextForwardToken returned is NOT
	// equal to the nextToken that you passed into the API call, there might be more log events available."
	t.Run("GetLogEvents: forward and backward pages end on an unchanged token", func(t *testing.T) {
		var got []string
		in := &cloudwatchlogs.GetLogEventsInput{LogGroupName: g, LogStreamName: first, StartFromHead: aws.Bool(true), Limit: aws.Int32(2)}
		for range 10 {
			out, err := c.GetLogEvents(ctx, in)
			if err != nil {
				t.Fatalf("GetLogEvents: %v", err)
			}
			for _, ev := range out.Events {
				got = append(got, aws.ToString(ev.Message))
			}
			if in.NextToken != nil && aws.ToString(out.NextForwardToken) == aws.ToString(in.NextToken) {
				break
			}
			in.NextToken = out.NextForwardToken
		}
		if strings.Join(got, "|") != "line 0 of AllTraffic/s00|line 1 of AllTraffic/s00|line 2 of AllTraffic/s00" {
			t.Errorf("forward pages = %q, want the three events once, oldest first", got)
		}
		got = nil
		in = &cloudwatchlogs.GetLogEventsInput{LogGroupName: g, LogStreamName: first, Limit: aws.Int32(2)}
		for range 10 {
			out, err := c.GetLogEvents(ctx, in)
			if err != nil {
				t.Fatalf("GetLogEvents: %v", err)
			}
			var page []string
			for _, ev := range out.Events {
				page = append(page, aws.ToString(ev.Message))
			}
			got = append(page, got...)
			if in.NextToken != nil && aws.ToString(out.NextBackwardToken) == aws.ToString(in.NextToken) {
				break
			}
			in.NextToken = out.NextBackwardToken
		}
		if strings.Join(got, "|") != "line 0 of AllTraffic/s00|line 1 of AllTraffic/s00|line 2 of AllTraffic/s00" {
			t.Errorf("backward pages = %q, want the three events once", got)
		}
	})

	// FilterLogEvents pages. API reference: "If the results include a nextToken, there might be more log events
	// available. ... If the results don't include a nextToken, then pagination is finished."
	t.Run("FilterLogEvents: limit 40 pages through every event once", func(t *testing.T) {
		p := cloudwatchlogs.NewFilterLogEventsPaginator(c, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: g, Limit: aws.Int32(40)})
		seen := map[string]bool{}
		pages := 0
		for p.HasMorePages() && pages < 20 {
			out, err := p.NextPage(ctx)
			if err != nil {
				t.Fatalf("page %d: %v", pages+1, err)
			}
			if len(out.Events) > 40 {
				t.Errorf("page %d has %d events, more than the limit 40", pages+1, len(out.Events))
			}
			for _, ev := range out.Events {
				key := aws.ToString(ev.LogStreamName) + ":" + aws.ToString(ev.Message)
				if seen[key] {
					t.Errorf("event %s came twice", key)
				}
				seen[key] = true
			}
			pages++
		}
		if len(seen) != 3*streams || pages != 5 {
			t.Errorf("%d events in %d pages, want %d in 5", len(seen), pages, 3*streams)
		}
	})
}
