package emulator_test

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/cloud"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// awsCLI runs the AWS CLI found on PATH against the emulator at url, with only the variables cloud.LocalEnv
// prints (plus isolation from the user's configuration), and returns its stdout, stderr and exit code.
func awsCLI(ctx context.Context, t *testing.T, r *emulatortest.Emulator, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return awsCLIEnv(ctx, t, cloud.LocalEnv(r.URL, r.Key), args...)
}

// awsCLIEnv runs the AWS CLI with the variables env (plus isolation from the user's configuration).
func awsCLIEnv(ctx context.Context, t *testing.T, env [][2]string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	bin, err := exec.LookPath("aws")
	if err != nil {
		// Under CI=true every tool is installed, so a missing CLI fails; elsewhere the test is skipped with the reason.
		if os.Getenv("CI") == "true" {
			t.Fatalf("the AWS CLI is not on PATH (%v): CI installs it; install it (pip install awscli) and re-run", err)
		}
		t.Skipf("the AWS CLI is not on PATH (%v): install it (pip install awscli) to run this test; skipped outside CI, under CI=true this fails", err)
	}
	ctx, cancel := context.WithTimeout(ctx, hangBound) // one CLI run: about a second idle, many on a loaded machine
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	// The user's environment minus every AWS_ variable (pyenv and the like keep working), no shared config or
	// credentials files, no instance metadata, no retries.
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
		"AWS_PAGER=",
		"AWS_MAX_ATTEMPTS=1",
	)
	for _, kv := range env {
		cmd.Env = append(cmd.Env, kv[0]+"="+kv[1])
	}
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		t.Fatalf("aws %s: timed out (%v)\nstderr: %s", strings.Join(args, " "), ctx.Err(), errOut.String())
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitCode()
	case err != nil:
		t.Fatalf("aws %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), 0
}

// mustAWS runs the AWS CLI and fails the test unless it exits 0.
func mustAWS(ctx context.Context, t *testing.T, r *emulatortest.Emulator, args ...string) string {
	t.Helper()
	out, errOut, code := awsCLI(ctx, t, r, args...)
	if code != 0 {
		t.Fatalf("aws %s: exit %d\nstderr: %s", strings.Join(args, " "), code, errOut)
	}
	return out
}

// number parses the CLI's text output of a number (100 or 100.0); NaN when it is none.
func number(s string) float64 {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return math.NaN()
	}
	return f
}

// TestAWSCLI drives the emulator with the real AWS CLI (v1, botocore: CloudWatch over awsJson1_0) pointed at it
// by the variables deploy --local prints: describe and invoke an espeak-ng endpoint, create an alarm and
// describe it, and get a modeled error for an unknown endpoint.
func TestAWSCLI(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	c := r.Clients
	ctx := ctxFor(t, 5*hangBound) // a dozen CLI runs (each a Python start-up), each bounded by awsCLIEnv
	const name = "speech-espeak-ng"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1))
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)

	out := mustAWS(ctx, t, r, "sagemaker", "describe-endpoint", "--endpoint-name", name, "--query", "[EndpointName,EndpointStatus,ProductionVariants[0].CurrentInstanceCount]", "--output", "text")
	if got := strings.Fields(out); len(got) != 3 || got[0] != name || got[1] != "InService" || got[2] != "1" {
		t.Errorf("describe-endpoint = %q, want %s InService 1", out, name)
	}

	wav := filepath.Join(t.TempDir(), "speech.wav")
	out = mustAWS(ctx, t, r, "sagemaker-runtime", "invoke-endpoint", "--endpoint-name", name,
		"--content-type", "application/json", "--body", `{"text":"Hello from the AWS CLI.","format":"wav"}`,
		"--query", "ContentType", "--output", "text", wav)
	if strings.TrimSpace(out) != "audio/wav" {
		t.Errorf("invoke-endpoint ContentType = %q, want audio/wav", out)
	}
	audio, err := os.ReadFile(wav)
	if err != nil {
		t.Fatalf("invoke-endpoint wrote no output file: %v", err)
	}
	checkWAV(t, audio)

	mustAWS(ctx, t, r, "cloudwatch", "put-metric-alarm", "--alarm-name", "cli-invocations-high",
		"--namespace", "AWS/SageMaker", "--metric-name", "Invocations",
		"--dimensions", "Name=EndpointName,Value="+name, "Name=VariantName,Value=AllTraffic",
		"--statistic", "Sum", "--period", "60", "--evaluation-periods", "2", "--threshold", "100",
		"--comparison-operator", "GreaterThanThreshold")
	out = mustAWS(ctx, t, r, "cloudwatch", "describe-alarms", "--alarm-names", "cli-invocations-high",
		"--query", "MetricAlarms[0].[AlarmName,StateValue,EvaluationPeriods,Threshold,Dimensions[0].Value]", "--output", "text")
	// A new alarm starts in INSUFFICIENT_DATA; the evaluator (every second here) may already have judged a
	// complete period with the one invocation, far below the threshold: OK. ALARM would be wrong.
	if got := strings.Fields(out); len(got) != 5 || got[0] != "cli-invocations-high" || (got[1] != "INSUFFICIENT_DATA" && got[1] != "OK") ||
		got[2] != "2" || number(got[3]) != 100 || got[4] != name {
		t.Errorf("describe-alarms = %q, want cli-invocations-high INSUFFICIENT_DATA (or OK) 2 100 %s", out, name)
	}

	out = mustAWS(ctx, t, r, "cloudwatch", "get-metric-statistics", "--namespace", "AWS/SageMaker", "--metric-name", "Invocations",
		"--dimensions", "Name=EndpointName,Value="+name, "Name=VariantName,Value=AllTraffic",
		"--start-time", time.Now().Add(-10*time.Minute).UTC().Format(time.RFC3339), "--end-time", time.Now().Add(time.Minute).UTC().Format(time.RFC3339),
		"--period", "60", "--statistics", "Sum", "--query", "sum(Datapoints[].Sum)", "--output", "text")
	if number(out) != 1 {
		t.Errorf("get-metric-statistics Sum of Invocations = %q, want 1 (the one invoke-endpoint)", out)
	}

	for _, tc := range []struct {
		args []string
		code string
	}{
		{[]string{"sagemaker", "describe-endpoint", "--endpoint-name", "speech-missing"}, "ValidationException"},
		{[]string{"cloudwatch", "describe-alarms", "--state-value", "BOGUS"}, "ValidationError"},
	} {
		_, errOut, code := awsCLI(ctx, t, r, tc.args...)
		if code != 254 && code != 255 {
			t.Errorf("aws %s: exit %d, want 254 or 255 (a service error)\nstderr: %s", strings.Join(tc.args, " "), code, errOut)
		}
		if !strings.Contains(errOut, "("+tc.code+")") {
			t.Errorf("aws %s: stderr %q does not name the error code %s", strings.Join(tc.args, " "), errOut, tc.code)
		}
	}
}

// TestAWSCLIAccessKey: the AWS CLI configured by the variables the emulator prints is served; with another
// access key id it gets InvalidClientTokenId, unsigned (--no-sign-request) MissingAuthenticationToken, in
// SageMaker's awsJson1_1 and in CloudWatch's awsJson1_0 (awsQueryCompatible) shapes.
//
// AWS, "Common Errors" (https://docs.aws.amazon.com/cloudsearch/latest/developerguide/CommonErrors.html):
// InvalidClientTokenId, "The X.509 certificate or AWS access key ID provided does not exist in our records."
// HTTP Status Code: 403; MissingAuthenticationToken, "The request must contain either a valid (registered)
// AWS access key ID or X.509 certificate." HTTP Status Code: 403.
func TestAWSCLIAccessKey(t *testing.T) {
	r := emulatortest.Start(t)
	url := r.URL
	ctx := ctxFor(t, 5*hangBound) // a dozen CLI runs (each a Python start-up), each bounded by awsCLIEnv
	right := r.Key
	wrong := cloud.LocalCredentials{AccessKeyID: emulator.AccessKeyPrefix + emulator.RandomToken(16), SecretAccessKey: right.SecretAccessKey}
	for _, args := range [][]string{
		{"sagemaker", "list-endpoints"},
		{"cloudwatch", "describe-alarms"},
	} {
		if _, errOut, code := awsCLIEnv(ctx, t, cloud.LocalEnv(url, right), args...); code != 0 {
			t.Errorf("aws %s with the emulator's key: exit %d\nstderr: %s", strings.Join(args, " "), code, errOut)
		}
		for _, tc := range []struct {
			env  [][2]string
			args []string
			code string
		}{
			{cloud.LocalEnv(url, wrong), args, "InvalidClientTokenId"},
			{cloud.LocalEnv(url, right), append([]string{"--no-sign-request"}, args...), "MissingAuthenticationToken"},
		} {
			_, errOut, code := awsCLIEnv(ctx, t, tc.env, tc.args...)
			if code != 254 && code != 255 {
				t.Errorf("aws %s: exit %d, want 254 or 255 (a service error)\nstderr: %s", strings.Join(tc.args, " "), code, errOut)
			}
			if !strings.Contains(errOut, "("+tc.code+")") {
				t.Errorf("aws %s: stderr %q does not name the error code %s", strings.Join(tc.args, " "), errOut, tc.code)
			}
		}
	}
}

// TestAWSCLIScheduledActions: the AWS CLI (botocore's application-autoscaling model) puts, lists (its own
// pagination over NextToken), and deletes scheduled actions, sees the activity of one that ran, and gets the
// modeled errors.
func TestAWSCLIScheduledActions(t *testing.T) {
	r := emulatortest.Start(t)
	ctx := ctxFor(t, 5*hangBound) // a dozen CLI runs (each a Python start-up), each bounded by awsCLIEnv
	const name = "speech-cli-sched"
	emulatortest.Endpoint(t, r, name)
	res := emulator.ResourceIDOf(name, "AllTraffic")
	target := []string{"--service-namespace", "sagemaker", "--resource-id", res, "--scalable-dimension", "sagemaker:variant:DesiredInstanceCount"}
	aas := func(op string, args ...string) []string {
		return append(append([]string{"application-autoscaling", op}, target...), args...)
	}
	mustAWS(ctx, t, r, aas("register-scalable-target", "--min-capacity", "1", "--max-capacity", "4")...)

	// The user guide's recurring example, in a time zone, with start and end times.
	mustAWS(ctx, t, r, aas("put-scheduled-action", "--scheduled-action-name", "weekday-mornings",
		"--schedule", "cron(30 6 ? * MON-FRI *)", "--timezone", "Europe/Paris",
		"--start-time", "2030-01-01T00:00:00Z", "--end-time", "2031-01-01T00:00:00Z",
		"--scalable-target-action", "MinCapacity=2,MaxCapacity=3")...)
	mustAWS(ctx, t, r, aas("put-scheduled-action", "--scheduled-action-name", "every-six-hours",
		"--schedule", "rate(6 hours)", "--scalable-target-action", "MinCapacity=1")...)
	// An at() action a few seconds ahead. An instant already past when the action is put does not run, and the
	// CLI takes a second or more to start: when the put returns after the instant, it is put again further ahead.
	for ahead := 5 * time.Second; ; ahead *= 2 {
		at := time.Now().UTC().Add(ahead).Truncate(time.Second)
		mustAWS(ctx, t, r, aas("put-scheduled-action", "--scheduled-action-name", "right-now",
			"--schedule", "at("+at.Format("2006-01-02T15:04:05")+")", "--scalable-target-action", "MinCapacity=1,MaxCapacity=3")...)
		if time.Now().Before(at) {
			break
		}
		if ahead > hangBound {
			t.Fatalf("put-scheduled-action took longer than %s", ahead)
		}
	}

	// --page-size 1: the CLI asks for pages of one and follows NextToken.
	out := mustAWS(ctx, t, r, "application-autoscaling", "describe-scheduled-actions", "--service-namespace", "sagemaker", "--page-size", "1",
		"--query", "ScheduledActions[].[ScheduledActionName,Schedule]", "--output", "text")
	want := "weekday-mornings cron(30 6 ? * MON-FRI *) every-six-hours rate(6 hours) right-now"
	if got := strings.Join(strings.Fields(out), " "); !strings.HasPrefix(got, want) {
		t.Errorf("describe-scheduled-actions = %q, want %q then right-now's at()", got, want)
	}
	out = mustAWS(ctx, t, r, "application-autoscaling", "describe-scheduled-actions", "--service-namespace", "sagemaker",
		"--scheduled-action-names", "weekday-mornings", "--query",
		"ScheduledActions[0].[Timezone,StartTime,EndTime,ScalableTargetAction.MinCapacity,ScalableTargetAction.MaxCapacity]", "--output", "text")
	// The CLI prints timestamps as they came on the wire (epoch seconds) unless configured otherwise.
	if got := strings.Fields(out); len(got) != 5 || got[0] != "Europe/Paris" || number(got[1]) != 1893456000 ||
		number(got[2]) != 1924992000 || got[3] != "2" || got[4] != "3" {
		t.Errorf("weekday-mornings = %q", out)
	}

	eventually(t, hangBound, "right-now to run", func() bool {
		out := mustAWS(ctx, t, r, aas("describe-scaling-activities", "--query", "ScalingActivities[].Cause", "--output", "text")...)
		return strings.Contains(out, "scheduled action name right-now was triggered")
	})
	out = mustAWS(ctx, t, r, "application-autoscaling", "describe-scalable-targets", "--service-namespace", "sagemaker", "--resource-ids", res,
		"--query", "ScalableTargets[0].[MinCapacity,MaxCapacity]", "--output", "text")
	if got := strings.Fields(out); len(got) != 2 || got[0] != "1" || got[1] != "3" {
		t.Errorf("the target's bounds after right-now ran: %q, want 1 3", out)
	}

	mustAWS(ctx, t, r, aas("delete-scheduled-action", "--scheduled-action-name", "every-six-hours")...)
	for _, tc := range []struct {
		args []string
		code string
	}{
		{aas("delete-scheduled-action", "--scheduled-action-name", "every-six-hours"), "ObjectNotFoundException"},
		{aas("put-scheduled-action", "--scheduled-action-name", "bad", "--schedule", "cron(0 8 * * *)"), "ValidationException"},
		{aas("put-scheduled-action", "--scheduled-action-name", "bad", "--schedule", "rate(1 day)", "--timezone", "Nowhere/Special"), "ValidationException"},
		{aas("put-scheduled-action", "--scheduled-action-name", "bad:name", "--schedule", "rate(1 day)"), "ValidationException"},
	} {
		_, errOut, code := awsCLI(ctx, t, r, tc.args...)
		if code != 254 && code != 255 {
			t.Errorf("aws %s: exit %d, want 254 or 255 (a service error)\nstderr: %s", strings.Join(tc.args, " "), code, errOut)
		}
		if !strings.Contains(errOut, "("+tc.code+")") {
			t.Errorf("aws %s: stderr %q does not name the error code %s", strings.Join(tc.args, " "), errOut, tc.code)
		}
	}
}
