package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// awsDestroy is a destroy on AWS against doubles, in a temporary app directory, with an empty journal
// directory.
func awsDestroy(t *testing.T, run *recorder, stdin io.Reader, terminal bool, args ...string) (*destroyOpts, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	d, _, _, _ := awsDeploy(t, run, goodAccount(), "us-east-1", args...)
	var out, errOut bytes.Buffer
	o := &destroyOpts{args: args, catalog: d.catalog, stdout: &out, stderr: &errOut, stdin: stdin, stdinIsTerminal: terminal,
		journalDir: filepath.Join(t.TempDir(), "journals"), aws: d.aws, runner: run, checkTimeout: 2 * time.Second, preflightEnv: d.preflightEnv,
		attach: func(string) (localEmulator, bool, error) {
			t.Fatal("destroy attached to the emulator")
			return localEmulator{}, false, nil
		}}
	return o, &out, &errOut
}

func runDestroy(ctx context.Context, o *destroyOpts) error {
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Execute(ctx)
}

// writeJournal leaves a freeze journal of the endpoint in dir, as a killed qmax would.
func writeJournal(t *testing.T, dir, endpoint string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, endpoint+".json")
	j := `{"schema_version":1,"endpoint":"` + endpoint + `","variant":"AllTraffic","run_id":"r1","pid":4242,"command":"tts-bench qmax","created":"2026-11-30T10:00:00Z",` +
		`"desired_instance_count":1,"target_existed":false,"min_capacity":0,"max_capacity":0,"suspended":{"dynamic_scaling_in_suspended":false,"dynamic_scaling_out_suspended":false,"scheduled_scaling_suspended":false}}`
	if err := os.WriteFile(path, []byte(j), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// --yes destroys the endpoint stack alone with CDK and says what remains.
func TestDestroyAWS(t *testing.T) {
	run := newRecorder(false) // no Docker: destroy builds nothing, so it does not check for it
	o, out, errOut := awsDestroy(t, run, strings.NewReader(""), false, "kokoro-82m")
	o.yes = true
	if err := runDestroy(context.Background(), o); err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	if len(run.streamed) != 1 || strings.Join(run.streamed[0].Args, " ") != "destroy SpeechEndpointStack-kokoro-82m -c model=kokoro-82m --exclusively --force" {
		t.Fatalf("streamed %+v", run.streamed)
	}
	for _, c := range run.Calls() {
		if c[0] == "docker" {
			t.Errorf("destroy checked Docker")
		}
	}
	golden(t, "destroy-aws.stdout", out.String())
}

// Confirmation: y destroys; anything else, or no answer before Ctrl-C, destroys nothing; a stdin that is not a
// terminal is refused up front with the fix.
func TestDestroyConfirmation(t *testing.T) {
	for answer, wantCode := range map[string]int{"y\n": 0, "YES\n": 0, "n\n": 1, "\n": 1, "": 1} {
		run := newRecorder(true)
		o, _, errOut := awsDestroy(t, run, strings.NewReader(answer), true, "espeak-ng")
		err := runDestroy(context.Background(), o)
		if exitcode.Code(err) != wantCode || (len(run.streamed) == 1) != (wantCode == 0) {
			t.Errorf("answer %q: %v (exit %d), streamed %d, want exit %d", answer, err, exitcode.Code(err), len(run.streamed), wantCode)
		}
		if !strings.Contains(errOut.String(), "Destroy SpeechEndpointStack-espeak-ng in aws://123456789012/us-east-1: endpoint speech-espeak-ng") || !strings.Contains(errOut.String(), "[y/N]") {
			t.Errorf("answer %q: question:\n%s", answer, errOut)
		}
	}

	run := newRecorder(true)
	o, _, _ := awsDestroy(t, run, strings.NewReader("y\n"), false, "espeak-ng")
	err := runDestroy(context.Background(), o)
	if exitcode.Code(err) != 2 || !strings.Contains(err.Error(), "stdin is not a terminal: pass --yes") || len(run.streamed) != 0 || len(run.Calls()) != 0 {
		t.Errorf("non-terminal stdin: %v, streamed %v, programs %v", err, run.streamed, run.Calls())
	}

	pr, pw := io.Pipe()
	defer pw.Close()
	run = newRecorder(true)
	o, _, _ = awsDestroy(t, run, pr, true, "espeak-ng")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = runDestroy(ctx, o)
	if err == nil || !strings.Contains(err.Error(), "interrupted while asking: nothing was destroyed") || len(run.streamed) != 0 {
		t.Errorf("interrupted: %v, streamed %v", err, run.streamed)
	}
}

// A freeze journal of the endpoint blocks destroy, on AWS and --local, before anything is checked, asked or
// run; --force goes on and warns.
func TestDestroyRefusesWithJournal(t *testing.T) {
	run := newRecorder(true)
	o, out, _ := awsDestroy(t, run, strings.NewReader("y\n"), true, "espeak-ng")
	path := writeJournal(t, o.journalDir, "speech-espeak-ng")
	err := runDestroy(context.Background(), o)
	if exitcode.Code(err) != 1 || len(run.Calls()) != 0 || len(run.streamed) != 0 || out.Len() != 0 {
		t.Fatalf("%v (exit %d), programs %v, streamed %v", err, exitcode.Code(err), run.Calls(), run.streamed)
	}
	for _, w := range []string{"refused: freeze journal " + path + " exists", `"tts-bench qmax" (pid 4242, run r1)`, "tts-bench thaw --model espeak-ng", "--force"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}

	// --local refuses the same way, before connecting to the emulator (awsDestroy's connect fails the test).
	o, _, _ = awsDestroy(t, run, nil, false, "espeak-ng")
	o.local, o.emulator = true, emulatorSettings{stateDir: t.TempDir(), port: 4599}
	writeJournal(t, o.journalDir, "speech-espeak-ng")
	err = runDestroy(context.Background(), o)
	if exitcode.Code(err) != 1 || !strings.Contains(err.Error(), "tts-bench thaw --model espeak-ng --local") {
		t.Errorf("--local: %v", err)
	}

	// An unreadable journal still counts; --force destroys anyway.
	run = newRecorder(true)
	o, _, errOut := awsDestroy(t, run, nil, false, "espeak-ng")
	if err := os.MkdirAll(o.journalDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(o.journalDir, "speech-espeak-ng.json"), []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	o.yes = true
	if err := runDestroy(context.Background(), o); exitcode.Code(err) != 1 || !strings.Contains(err.Error(), "a measurement is running on it") {
		t.Errorf("broken journal: %v", err)
	}
	o.force = true
	if err := runDestroy(context.Background(), o); err != nil || len(run.streamed) != 1 || !strings.Contains(errOut.String(), "warning: --force") {
		t.Errorf("--force: %v, streamed %v\n%s", err, run.streamed, errOut)
	}
	// A journal of another endpoint does not block.
	run = newRecorder(true)
	o, _, _ = awsDestroy(t, run, nil, false, "espeak-ng")
	writeJournal(t, o.journalDir, "speech-kokoro-82m")
	o.yes = true
	if err := runDestroy(context.Background(), o); err != nil || len(run.streamed) != 1 {
		t.Errorf("other endpoint's journal: %v", err)
	}
}

// The preflight of destroy fails without credentials: it could not run (exit 3); nothing is asked or run.
func TestDestroyPreflightFails(t *testing.T) {
	run := newRecorder(true)
	o, _, errOut := awsDestroy(t, run, strings.NewReader("y\n"), true, "espeak-ng")
	o.preflightEnv = func(context.Context, awsSettings, time.Duration) preflightEnv {
		return preflightEnv{configErr: os.ErrNotExist}
	}
	err := runDestroy(context.Background(), o)
	if exitcode.Code(err) != 3 || len(run.streamed) != 0 || strings.Contains(errOut.String(), "[y/N]") {
		t.Errorf("%v, streamed %v\n%s", err, run.streamed, errOut)
	}
	if !strings.Contains(errOut.String(), "FAIL     AWS region") || !strings.Contains(errOut.String(), "FAIL     AWS credentials") {
		t.Errorf("preflight:\n%s", errOut)
	}
}
