package emulator_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/cloud"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// errCode returns the AWS error code and HTTP status of an SDK error ("" and 0 for none).
func errCode(err error) (string, int) {
	if err == nil {
		return "", 0
	}
	code, status := "", 0
	var api smithy.APIError
	if errors.As(err, &api) {
		code = api.ErrorCode()
	}
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		status = re.HTTPStatusCode()
	}
	return code, status
}

// sdkCalls makes one call of every service the emulator speaks through c and returns their errors by name.
func sdkCalls(t *testing.T, c emulatortest.Clients) map[string]error {
	ctx := ctxFor(t, 30*time.Second)
	errs := map[string]error{}
	_, errs["SageMaker.ListEndpoints"] = c.SageMaker.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{})
	_, errs["ApplicationAutoScaling.DescribeScalableTargets"] = c.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	_, errs["CloudWatch.DescribeAlarms"] = c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	_, errs["CloudWatchLogs.DescribeLogStreams"] = c.Logs.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String("/aws/sagemaker/Endpoints/speech-none")})
	_, errs["SageMakerRuntime.InvokeEndpoint"] = c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String("speech-none"), ContentType: aws.String("application/json"), Body: []byte(`{"text":"hi"}`)})
	_, errs["SageMakerRuntime.InvokeEndpointWithResponseStream"] = c.Runtime.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{EndpointName: aws.String("speech-none"), ContentType: aws.String("application/json"), Body: []byte(`{"text":"hi"}`)})
	return errs
}

// The emulator serves only requests signed with the access key id it generated for its state directory.
//
// AWS, "Common Errors" (https://docs.aws.amazon.com/cloudsearch/latest/developerguide/CommonErrors.html),
// the errors common to the API actions of all AWS services:
//   - MissingAuthenticationToken: "The request must contain either a valid (registered) AWS access key ID or
//     X.509 certificate." HTTP Status Code: 403
//   - InvalidClientTokenId: "The X.509 certificate or AWS access key ID provided does not exist in our
//     records." HTTP Status Code: 403
//   - IncompleteSignature: "The request signature does not conform to AWS standards." HTTP Status Code: 400
func TestAccessKeyRequired(t *testing.T) {
	dir := t.TempDir()
	r := emulatortest.Start(t, emulatortest.StateDir(dir))
	url := r.URL
	key := r.Key

	// The key is random, kept in the state directory readable by its owner only.
	fi, err := os.Stat(filepath.Join(dir, emulator.CredentialsFile))
	if err != nil {
		t.Fatalf("the emulator wrote no %s: %v", emulator.CredentialsFile, err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", emulator.CredentialsFile, fi.Mode().Perm())
	}
	if read, err := emulator.ReadCredentials(dir); err != nil || read.AccessKeyID != key.AccessKeyID {
		t.Errorf("ReadCredentials = %+v, %v; want the key the emulator accepts, %s", read, err, key.AccessKeyID)
	}
	if !strings.HasPrefix(key.AccessKeyID, emulator.AccessKeyPrefix) || len(key.AccessKeyID) < len(emulator.AccessKeyPrefix)+16 {
		t.Errorf("access key id %q is not %s and 16 random characters", key.AccessKeyID, emulator.AccessKeyPrefix)
	}

	// The right key: every service answers past authentication (the runtime with its own modeled error for an
	// endpoint that does not exist).
	for op, err := range sdkCalls(t, r.Clients) {
		code, _ := errCode(err)
		switch {
		case strings.HasPrefix(op, "SageMakerRuntime."):
			if code != "ValidationError" {
				t.Errorf("%s with the emulator's key: %v, want ValidationError for the unknown endpoint", op, err)
			}
		case strings.HasPrefix(op, "CloudWatchLogs."):
			if code != "ResourceNotFoundException" {
				t.Errorf("%s with the emulator's key: %v, want ResourceNotFoundException for the unknown group", op, err)
			}
		case err != nil:
			t.Errorf("%s with the emulator's key: %v", op, err)
		}
	}

	// Another key (of the emulator's own form, and AWS's example key): InvalidClientTokenId, 403, in each
	// service's protocol.
	for _, other := range []string{emulator.AccessKeyPrefix + emulator.RandomToken(16), "AKIAIOSFODNN7EXAMPLE", strings.ToLower(key.AccessKeyID), key.AccessKeyID + "X"} {
		for op, err := range sdkCalls(t, emulatortest.NewClients(url, cloud.LocalCredentials{AccessKeyID: other, SecretAccessKey: key.SecretAccessKey})) {
			if code, status := errCode(err); code != "InvalidClientTokenId" || status != http.StatusForbidden {
				t.Errorf("%s with access key id %s: %v (code %q, HTTP %d), want InvalidClientTokenId 403", op, other, err, code, status)
			}
		}
	}

	// No credentials at all (the SDK signs nothing): MissingAuthenticationToken, 403.
	anon := emulatortest.NewClients(url, key)
	cfg := cloud.LocalConfig(url, key)
	cfg.Credentials = aws.AnonymousCredentials{}
	anon.SageMaker = sagemaker.NewFromConfig(cfg)
	anon.Runtime = sagemakerruntime.NewFromConfig(cfg)
	anon.AutoScaling = applicationautoscaling.NewFromConfig(cfg)
	anon.CloudWatch = cloudwatch.NewFromConfig(cfg)
	anon.Logs = cloudwatchlogs.NewFromConfig(cfg)
	for op, err := range sdkCalls(t, anon) {
		if code, status := errCode(err); code != "MissingAuthenticationToken" || status != http.StatusForbidden {
			t.Errorf("%s without credentials: %v (code %q, HTTP %d), want MissingAuthenticationToken 403", op, err, code, status)
		}
	}

	// A header that is not SigV4, or SigV4 without its parts: IncompleteSignature, and nothing runs.
	for _, h := range []string{
		"Basic " + key.AccessKeyID,
		"AWS4-HMAC-SHA256 Credential=" + key.AccessKeyID,
		"AWS4-HMAC-SHA256 Credential=" + key.AccessKeyID + "/20250101/us-east-1/sagemaker/aws4_request, SignedHeaders=host",
		"AWS4-HMAC-SHA256 Credential=" + key.AccessKeyID + "/us-east-1/sagemaker/aws4_request, SignedHeaders=host, Signature=00",
		"AWS4-HMAC-SHA256 Credential=/20250101/us-east-1/sagemaker/aws4_request, SignedHeaders=host, Signature=00",
	} {
		resp := rawCall(t, url, "SageMaker.CreateModel", h, `{"ModelName":"sneaky","PrimaryContainer":{"Image":"x"}}`)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amzn-ErrorType") != "IncompleteSignature" {
			t.Errorf("Authorization %q: HTTP %d %s, want 400 IncompleteSignature", h, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"))
		}
	}
	if _, err := r.SageMaker.DescribeModel(ctxFor(t, 10*time.Second), &sagemaker.DescribeModelInput{ModelName: aws.String("sneaky")}); err == nil {
		t.Errorf("a request with an incomplete signature created a model")
	}

	// The health route answers without a key and says who the emulator is, never its key.
	resp, err := http.Get(url + emulator.HealthPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || bytes.Contains(body, []byte(key.AccessKeyID)) || bytes.Contains(body, []byte(key.SecretAccessKey)) {
		t.Errorf("health: HTTP %d %s; want 200 without the access key", resp.StatusCode, body)
	}

	// The key stays with the state directory across restarts; another directory has another key.
	r.Stop()
	r2 := emulatortest.Start(t, emulatortest.StateDir(dir))
	if got := r2.Credentials(); got != emulator.Credentials(key) {
		t.Errorf("after a restart the key is %s, want %s", got.AccessKeyID, key.AccessKeyID)
	}
	r3 := emulatortest.Start(t)
	if r3.Credentials().AccessKeyID == key.AccessKeyID {
		t.Errorf("two state directories share the access key id %s", key.AccessKeyID)
	}
	if _, err := emulatortest.NewClients(r3.URL, key).SageMaker.ListEndpoints(ctxFor(t, 10*time.Second), &sagemaker.ListEndpointsInput{}); err == nil {
		t.Errorf("the key of one state directory opens the emulator of another")
	}
}

// A damaged key file is refused at start with the file named and the fix, not replaced behind the user's
// back (tools holding the old key would stop working without a word).
func TestCorruptCredentialsRefused(t *testing.T) {
	for _, content := range []string{"", "{", `{"access_key_id":"","secret_access_key":""}`, `{"access_key_id":"AKIDLOCALSHORT","secret_access_key":"0123456789abcdef"}`} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, emulator.CredentialsFile), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := emulator.Open(emulator.Options{StateDir: dir, Addr: "127.0.0.1:0"})
		if err == nil || !strings.Contains(err.Error(), emulator.CredentialsFile) || !strings.Contains(err.Error(), "delete the file") {
			t.Errorf("Open with %s = %q: %v; want an error naming the file and the fix", emulator.CredentialsFile, content, err)
		}
	}
}

// rawCall posts body to the awsJson1_1 operation target with the given Authorization header ("" for none).
func rawCall(t *testing.T, url, target, auth, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", emulator.ContentTypeJSON11)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", target, err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// A control-plane body over emulator.MaxControlPlaneBody is refused whole with 413, whether its Content-Length says so
// or it arrives chunked; nothing of it is parsed or stored. HTTP semantics (RFC 9110, 15.5.14): "The 413
// (Content Too Large) status code indicates that the server is refusing to process a request because the
// request content is larger than the server is willing or able to process."
func TestControlPlaneBodyLimit(t *testing.T) {
	r := emulatortest.Start(t)
	url := r.URL
	c := r.Clients
	ctx := ctxFor(t, time.Minute)

	// Through the SDK: a 17 MiB environment value.
	_, err := c.SageMaker.CreateModel(ctx, &sagemaker.CreateModelInput{
		ModelName:        aws.String("too-big"),
		PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String("x"), Environment: map[string]string{"BIG": strings.Repeat("a", 17<<20)}},
	})
	if code, status := errCode(err); code != "RequestEntityTooLargeException" || status != http.StatusRequestEntityTooLarge {
		t.Errorf("CreateModel with a 17 MiB body: %v (code %q, HTTP %d), want RequestEntityTooLargeException 413", err, code, status)
	}
	if _, err := c.SageMaker.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String("too-big")}); err == nil {
		t.Errorf("the refused CreateModel created the model")
	}
	// CloudWatch over rpcv2Cbor gets the same answer in its protocol.
	_, err = c.CloudWatch.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(strings.Repeat("n", 17<<20)), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"),
		Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold})
	if code, status := errCode(err); code != "RequestEntityTooLargeException" || status != http.StatusRequestEntityTooLarge {
		t.Errorf("PutMetricAlarm (rpcv2Cbor) with a 17 MiB body: %v (code %q, HTTP %d), want RequestEntityTooLargeException 413", err, code, status)
	}
	if out, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}); err != nil || len(out.MetricAlarms) != 0 {
		t.Errorf("after the refused PutMetricAlarm: DescribeAlarms = %+v, %v; want no alarm", out, err)
	}

	auth := sigV4Header(r.Key.AccessKeyID, "sagemaker")
	post := func(body io.Reader) (*http.Response, string) {
		req, _ := http.NewRequest(http.MethodPost, url+"/", body)
		req.Header.Set("X-Amz-Target", "SageMaker.DescribeEndpoint")
		req.Header.Set("Content-Type", emulator.ContentTypeJSON11)
		req.Header.Set("Authorization", auth)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("post: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	// Exactly the limit is read and parsed (an empty object: DescribeEndpoint without a name); one byte more is
	// refused, also without a Content-Length (chunked).
	atLimit := `{"EndpointName":"speech-x"}` + strings.Repeat(" ", emulator.MaxControlPlaneBody-len(`{"EndpointName":"speech-x"}`))
	if resp, body := post(strings.NewReader(atLimit)); resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Amzn-ErrorType") != "ValidationException" {
		t.Errorf("a body of exactly %d bytes: HTTP %d %s %s, want it parsed (400 ValidationException, no such endpoint)", emulator.MaxControlPlaneBody, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), body)
	}
	for name, body := range map[string]io.Reader{
		"Content-Length": strings.NewReader(atLimit + " "),
		"chunked":        io.MultiReader(strings.NewReader(atLimit), strings.NewReader(" ")),
		"50 MB chunked":  io.MultiReader(strings.NewReader(strings.Repeat(" ", 50<<20))),
	} {
		resp, b := post(body)
		if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get("X-Amzn-ErrorType") != "RequestEntityTooLargeException" || !strings.Contains(b, "16 MiB") {
			t.Errorf("%s body over the limit: HTTP %d %s %s, want 413 RequestEntityTooLargeException naming the limit", name, resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), b)
		}
	}
}

// A client that sends part of a request and stalls loses its connection after the read timeout: a body with
// 408, headers without an answer.
func TestReadTimeout(t *testing.T) {
	r := emulatortest.Start(t, func(o *emulator.Options) { o.ReadTimeout = time.Second })
	addr := strings.TrimPrefix(r.URL, "http://")
	auth := sigV4Header(r.Credentials().AccessKeyID, "sagemaker")
	for name, partial := range map[string]string{
		"body":    "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: SageMaker.ListEndpoints\r\nContent-Type: application/x-amz-json-1.1\r\nAuthorization: " + auth + "\r\nContent-Length: 100\r\n\r\n{\"",
		"headers": "POST / HTTP/1.1\r\nHost: x\r\nX-Amz-Target: SageMaker.ListEndpoints\r\n",
	} {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Write([]byte(partial)); err != nil {
			t.Fatal(err)
		}
		// The bound of this wait is far above the 1 s read timeout: the server, not this deadline, must end it.
		conn.SetReadDeadline(time.Now().Add(15 * time.Second))
		got, err := io.ReadAll(bufio.NewReader(conn))
		conn.Close()
		var netErr net.Error
		if errors.As(err, &netErr) && netErr.Timeout() {
			t.Errorf("%s: the connection of a stalled client stayed open 15 s with a 1 s read timeout", name)
			continue
		}
		if name == "body" && !strings.HasPrefix(string(got), "HTTP/1.1 408") {
			t.Errorf("stalled body: answered %q, want HTTP 408", got)
		}
	}
}

// The emulator publishes its identity in the discovery file and the lock file and answers it at its health
// route; emulator.Running trusts a file only once the emulator there answers the same instance and state directory,
// falls back to the other file when one is damaged, and the emulator restores a damaged file.
func TestDiscoveryIdentity(t *testing.T) {
	dir := t.TempDir()
	r := emulatortest.Start(t, emulatortest.StateDir(dir))
	self := r.Info()
	canon, _ := emulator.CanonicalDir(dir)
	if self.PID != os.Getpid() || len(self.Instance) < 20 || self.StateDir != canon || self.URL != r.URL {
		t.Fatalf("Info = %+v, want this process, a random instance id, state dir %s", self, canon)
	}
	infoPath := filepath.Join(dir, emulator.InfoFile)
	published, err := os.ReadFile(infoPath)
	if err != nil {
		t.Fatal(err)
	}
	var fromFile emulator.Info
	if err := json.Unmarshal(published, &fromFile); err != nil || fromFile.Instance != self.Instance {
		t.Fatalf("%s = %s (%v), want the emulator's identity", emulator.InfoFile, published, err)
	}
	lockCopy, _ := os.ReadFile(filepath.Join(dir, "emulator.lock"))
	if !bytes.Equal(lockCopy, published) {
		t.Errorf("the lock file holds %q, want the discovery file's %q", lockCopy, published)
	}

	for name, damage := range map[string]string{
		"truncated":                      string(published[:len(published)/2]),
		"empty":                          "",
		"another pid":                    strings.Replace(string(published), `"pid":`, `"pid":1,"x":`, 1),
		"another instance":               strings.Replace(string(published), self.Instance, "forged", 1),
		"a non-loopback address":         `{"pid":1,"url":"http://192.0.2.1:80","instance":"` + self.Instance + `"}`,
		"another emulator's identity":    `{"pid":1,"url":"` + emulatortest.Start(t).URL + `","instance":"` + self.Instance + `"}`,
		"a 1 MB file of one long string": `"` + strings.Repeat("x", 1<<20),
	} {
		if err := os.WriteFile(infoPath, []byte(damage), 0o644); err != nil {
			t.Fatal(err)
		}
		info, ok, err := emulator.Running(dir)
		if !ok || err != nil || info.PID != os.Getpid() || info.Instance != self.Instance || info.URL != self.URL {
			t.Errorf("discovery file with %s: emulator.Running = %+v, %v, %v; want the emulator itself", name, info, ok, err)
		}
		eventually(t, hangBound, "the emulator to restore its discovery file ("+name+")", func() bool {
			b, _ := os.ReadFile(infoPath)
			return bytes.Equal(b, published)
		})
	}

	// Once it stops, nothing claims it runs, and the lock file names no run.
	r.Stop()
	if info, ok, err := emulator.Running(dir); ok || err != nil {
		t.Errorf("after stop: emulator.Running = %+v, %v, %v", info, ok, err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "emulator.lock")); len(b) != 0 {
		t.Errorf("after stop the lock file still holds %q", b)
	}
}
