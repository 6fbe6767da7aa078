package emulatortest

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
)

// SPEECH_CONTAINER_BIN is used as given when it names an executable, and refused with the fix otherwise.
func TestContainerBinEnv(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "speech-container")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ContainerBinEnv, exe)
	if bin, err := buildContainer(); err != nil || bin != exe {
		t.Errorf("buildContainer with %s=%s = %q, %v; want it as given", ContainerBinEnv, exe, bin, err)
	}
	for path, want := range map[string]string{filepath.Join(dir, "missing"): "no such file", plain: "not an executable", dir: "not an executable"} {
		t.Setenv(ContainerBinEnv, path)
		if _, err := buildContainer(); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ContainerBinEnv) {
			t.Errorf("buildContainer with %s=%s: %v; want %q and the variable named", ContainerBinEnv, path, err, want)
		}
	}
}

// Start serves a real emulator with its key; Endpoint's cleanup deletes what it created, and a stopped
// emulator's cleanup does nothing.
func TestStartAndEndpointCleanup(t *testing.T) {
	var e *Emulator
	dir := t.TempDir() // outlives the subtest, unlike the subtest's own
	t.Run("deploy", func(t *testing.T) {
		e = Start(t, StateDir(dir))
		if !strings.HasPrefix(e.URL, "http://127.0.0.1:") || e.Key.AccessKeyID == "" || e.StateDir == "" {
			t.Fatalf("Start = URL %q, key %q, state %q", e.URL, e.Key.AccessKeyID, e.StateDir)
		}
		Endpoint(t, e, "speech-cleanup", Instances(1))
		if _, err := e.SageMaker.DescribeEndpoint(context.Background(), &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-cleanup")}); err != nil {
			t.Fatalf("DescribeEndpoint: %v", err)
		}
	})
	if !e.Stopped() {
		t.Fatalf("the emulator still runs after its test ended")
	}
	// The state the stopped emulator left has neither the endpoint nor its config and model.
	r := Start(t, StateDir(e.StateDir))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := r.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-cleanup")}); !notFound(err) {
		t.Errorf("DescribeEndpoint after cleanup: %v, want not found", err)
	}
	if _, err := r.SageMaker.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String("speech-cleanup")}); !notFound(err) {
		t.Errorf("DescribeModel after cleanup: %v, want not found", err)
	}
	if r.Key != e.Key {
		t.Errorf("the restarted emulator has key %s, want %s from the same state directory", r.Key.AccessKeyID, e.Key.AccessKeyID)
	}
}
