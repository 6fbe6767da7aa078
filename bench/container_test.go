package bench_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// startContainer runs the real inference container (serve) with env on a free loopback port, waits until
// /ping answers 200 (at most 30 s) and returns its base URL. The process is stopped when the test ends.
func startContainer(t *testing.T, env map[string]string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	cmd := exec.Command(emulatortest.ContainerBinary(t), "serve")
	cmd.Env = append(os.Environ(), fmt.Sprintf("SAGEMAKER_BIND_TO_PORT=%d", port), "INSTANCE_ID=bench-test")
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("container output:\n%s", logs.String())
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d", port)
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(url + "/ping")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return url
			}
		}
		select {
		case err := <-done:
			t.Fatalf("the container exited before it was ready: %v\n%s", err, logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container was not ready within 30s:\n%s", logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func stepConfig(t *testing.T, tr bench.Transport, texts []string, settle, hold, measure time.Duration) bench.Config {
	t.Helper()
	corpus, err := bench.NewCorpus("test", texts)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure = settle, hold, measure
	cfg.RequestTimeout, cfg.Grace = 20*time.Second, 20*time.Second
	cfg.SLO, cfg.MinRequests = 10*time.Second, 3
	cfg.Transport, cfg.Corpus, cfg.RunID = tr, corpus, t.Name()
	return cfg
}

// TestClosedLoopShape: against a calibration container with one slot and a known serial service time S (one
// 100 ms segment per request), concurrency C gives a mean response time of about C·S and a rate of about
// 1/S: the closed loop holds C in flight and the server serializes them. Loose bounds: the shape, not timings.
func TestClosedLoopShape(t *testing.T) {
	const S = 100 * time.Millisecond
	url := startContainer(t, map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "100", "ENGINE_WORKERS": "1", "SCHEDULER": "fifo"})
	cfg := stepConfig(t, bench.NewHTTP(url), []string{"Hello there", "Good morning", "Welcome back"}, 300*time.Millisecond, 2500*time.Millisecond, 2*time.Second)
	for _, c := range []int{1, 4} {
		res, err := bench.RunStep(context.Background(), cfg, c)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("C=%d: %d ok, response mean %.0f ms, rate %.2f/s, in flight %.2f (peak %d), TTFAB p95 %.0f ms, lag mean %.2f ms",
			c, res.OK, res.ResponseMeanMs, res.AchievedRPS, res.InFlightMean, res.InFlightPeak, res.TTFABP95Ms, res.LagMeanMs)
		want := float64(c) * float64(S/time.Millisecond)
		if res.ResponseMeanMs < 0.8*want || res.ResponseMeanMs > 1.6*want+50 {
			t.Errorf("C=%d: mean response %.0f ms, want about C·S = %.0f ms", c, res.ResponseMeanMs, want)
		}
		if res.AchievedRPS < 0.6/S.Seconds() || res.AchievedRPS > 1.15/S.Seconds() {
			t.Errorf("C=%d: rate %.2f/s, want about 1/S = %.0f/s", c, res.AchievedRPS, 1/S.Seconds())
		}
		if !res.Usable || res.InFlightPeak != c || res.Errors+res.Shed != 0 {
			t.Errorf("C=%d: usable %v (%s), in flight peak %d, %d errors, %d shed", c, res.Usable, res.UnusableReason, res.InFlightPeak, res.Errors, res.Shed)
		}
	}
}

// TestFirstChunkStarvesContinuations: with a slow calibration engine (80 ms per segment of 3 characters, i.e.
// 180 ms of audio), multi-segment texts and C=4, first-chunk scheduling serves every new request's first
// segment before continuations, so continuations fall behind real time: the p95 stall is large. fifo runs a
// request's segments back to back (80 ms of compute per 180 ms of audio) and never stalls.
func TestFirstChunkStarvesContinuations(t *testing.T) {
	text := []string{"Go. Go. Go. Go. Go."}
	stall := map[string]float64{}
	for _, sched := range []string{"fifo", "first-chunk"} {
		url := startContainer(t, map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "80", "ENGINE_WORKERS": "1", "SCHEDULER": sched})
		cfg := stepConfig(t, bench.NewHTTP(url), text, time.Second, 4*time.Second, 3*time.Second)
		res, err := bench.RunStep(context.Background(), cfg, 4)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d ok, TTFAB p95 %.0f ms, stall p95 %.0f ms (max %.0f), fail reasons %q", sched, res.OK, res.TTFABP95Ms, res.StallP95Ms, res.StallMaxMs, res.FailReasons)
		if res.OK < 3 {
			t.Fatalf("%s: only %d requests succeeded", sched, res.OK)
		}
		stall[sched] = res.StallP95Ms
		if sched == "first-chunk" && (res.MeetsSLO || !strings.Contains(strings.Join(res.FailReasons, ";"), "stall")) {
			t.Errorf("first-chunk: the step passes or fails for another reason than the stall: %q", res.FailReasons)
		}
		if sched == "fifo" && !res.MeetsSLO {
			t.Errorf("fifo: the step fails: %q", res.FailReasons)
		}
	}
	if stall["fifo"] > float64(bench.DefaultStallJitter/time.Millisecond) || stall["first-chunk"] < 200 {
		t.Errorf("p95 stall fifo %.0f ms, first-chunk %.0f ms: want fifo within the jitter and first-chunk above 200 ms", stall["fifo"], stall["first-chunk"])
	}
}

// TestSageMakerStreamStep: one short step over InvokeEndpointWithResponseStream against the emulator with
// a real espeak container, one SDK client per worker.
func TestSageMakerStreamStep(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, "speech-bench", emulatortest.InService())
	tr := &bench.SageMakerStream{Endpoint: "speech-bench", NewClient: func() bench.StreamInvoker { return e.NewClients().Runtime }}
	var out bytes.Buffer
	cfg := stepConfig(t, tr, []string{"Hello from the load engine.", "Two short sentences. Then a third."}, 300*time.Millisecond, 2*time.Second, 1500*time.Millisecond)
	cfg.Records = &out
	res, err := bench.RunStep(context.Background(), cfg, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("sagemaker-stream C=2: %d ok, TTFAB p95 %.0f ms, stall p95 %.0f ms, response mean %.0f ms", res.OK, res.TTFABP95Ms, res.StallP95Ms, res.ResponseMeanMs)
	if res.OK < 3 || res.Errors+res.Shed != 0 || res.TTFABP95Ms <= 0 || res.InFlightPeak != 2 {
		t.Errorf("step = %+v", res)
	}
	recs, err := bench.ReadRecords(&out)
	if err != nil {
		t.Fatal(err)
	}
	r := recs[0]
	if r.Transport != bench.TransportSageMakerStream || r.Class != bench.ClassOK || r.SampleRate != 22050 || r.AudioSeconds <= 0 || len(r.Chunks) == 0 {
		t.Errorf("record = %+v", r)
	}

	// A missing endpoint is a ModelError-free failure: class other, and the step fails.
	tr.Endpoint = "speech-missing"
	cfg.Records = nil
	res, err = bench.RunStep(context.Background(), cfg, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.MeetsSLO || res.OK != 0 || res.Errors == 0 {
		t.Errorf("missing endpoint: step = %+v", res)
	}
}

// TestShieldAttributeShedsAtItsDepth: a transport WithCustomAttributes(ShieldAttributes(2)) makes the real
// container (QUEUE_MAX_DEPTH unset: the measurement configuration) admit its requests within 2, on both
// transports (sagemaker-stream through the emulator, which forwards CustomAttributes, and http): a closed loop of 4
// whose requests each hold the engine 2 s puts the third and fourth request of the first round at a full shield,
// and they come back shed (503, ClassShed) before anything completes. Without the attribute the same step sheds
// nothing. What is asserted is the shield's cause (4 sent into 2 places), not a timing.
func TestShieldAttributeShedsAtItsDepth(t *testing.T) {
	env := map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "2000", "ENGINE_WORKERS": "4", "SCHEDULER": "fifo"}
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, "speech-shield", emulatortest.InService(), emulatortest.Env(env))
	for name, plain := range map[string]bench.Transport{
		"sagemaker-stream": &bench.SageMakerStream{Endpoint: "speech-shield", NewClient: func() bench.StreamInvoker { return e.NewClients().Runtime }},
		"http":             bench.NewHTTP(startContainer(t, env)),
	} {
		t.Run(name, func(t *testing.T) {
			shielded, err := bench.WithCustomAttributes(plain, bench.ShieldAttributes(2))
			if err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				tr     bench.Transport
				shield bool
			}{{shielded, true}, {plain, false}} {
				var out bytes.Buffer
				cfg := stepConfig(t, tc.tr, []string{"Hi"}, 0, 3*time.Second, 3*time.Second)
				cfg.Records = &out
				res, err := bench.RunStep(context.Background(), cfg, 4)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("shield %v: %d requests, %d ok, %d shed, %d errors", tc.shield, res.Requests, res.OK, res.Shed, res.Errors)
				switch {
				case tc.shield && (res.Shed == 0 || res.OK == 0):
					t.Errorf("with %s: %d ok, %d shed: want both (2 places for 4 in flight)", bench.ShieldAttributes(2), res.OK, res.Shed)
				case !tc.shield && res.Shed != 0:
					t.Errorf("without the attribute: %d shed, want none (the endpoint is unbounded)", res.Shed)
				}
				recs, err := bench.ReadRecords(&out)
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range recs {
					if r.Class == bench.ClassShed && r.Status != 503 {
						t.Errorf("a shed record with status %d, want 503", r.Status)
					}
				}
			}
		})
	}
}
