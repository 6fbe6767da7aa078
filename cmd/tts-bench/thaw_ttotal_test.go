package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"

	"github.com/speech-infra/speech-infra/capacity"
)

// After ttotal's kill -9, thaw lists the count it restored in its "changed:" lines. With a target
// (1–1) on the endpoint, ttotal freezes it, raises the count to 2 and is killed; thaw registers the journaled
// bounds, which already bring the count back to 1 (as Application Auto Scaling does), and must say so.
func TestThawAfterTTotalKillSaysTheCount(t *testing.T) {
	e := profiled(t, 50)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	qpath := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir, "--container-dir", containerDir}
	if _, err := e.AutoScaling.RegisterScalableTarget(t.Context(), &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: "sagemaker", ResourceId: aws.String(capacity.ResourceID("speech-espeak-ng", "AllTraffic")),
		ScalableDimension: "sagemaker:variant:DesiredInstanceCount", MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(1)}); err != nil {
		t.Fatal(err)
	}
	cmd, out := startCLI(t, append([]string{"ttotal", "--force", "--qmax", qpath, "--warmup", "1s", "--window", "2s", "--min-samples", "5",
		"--probe-concurrency", "4", "--max-wait", "60s", "--request-timeout", "10s", "--output", filepath.Join(dir, "art", "ttotal.json")}, common...)...)
	waitOutput(t, out, "desired instance count 1 → 2", 60*time.Second)
	time.Sleep(500 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 10*time.Second, out)
	stdout, stderr, code := runCLI(t, append([]string{"thaw"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "restoring from the journal") || !strings.Contains(stdout, "changed: instance count 2 → 1") {
		t.Fatalf("thaw after ttotal's kill -9: exit %d, want the count it restored\n%s%s\nttotal:\n%s", code, stdout, stderr, out)
	}
	if got := readScaling(t, e); got.Desired != 1 {
		t.Fatalf("after thaw: %+v, want 1 instance", got)
	}
}
