package espeak

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/engine"
)

// TestMain lets the pool re-execute this test binary as its workers, the way
// the real binary re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(RoleEnv) == RoleWorker {
		if err := RunWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func testExe(t testing.TB) string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

func collect(t testing.TB, synth func(emit func([]int16) error) error) []int16 {
	t.Helper()
	var all []int16
	if err := synth(func(s []int16) error { all = append(all, s...); return nil }); err != nil {
		t.Fatal(err)
	}
	return all
}

func peak(s []int16) int {
	p := 0
	for _, v := range s {
		p = max(p, int(v), -int(v))
	}
	return p
}

func TestInProcessSynthesisIsSpeech(t *testing.T) {
	s := collect(t, func(e func([]int16) error) error { return Synthesize("Hello world.", DefaultVoice, DefaultRate, e) })
	if len(s) < SampleRate/4 {
		t.Fatalf("%d samples for \"Hello world.\", want at least a quarter second", len(s))
	}
	if peak(s) < 3000 {
		t.Errorf("peak amplitude %d: the audio is (nearly) silent", peak(s))
	}
	fast := collect(t, func(e func([]int16) error) error { return Synthesize("Hello world.", DefaultVoice, RateFor(2), e) })
	if len(fast) >= len(s) {
		t.Errorf("speed 2 gave %d samples, speed 1 gave %d: faster speech must be shorter", len(fast), len(s))
	}
	if err := Synthesize("x", "no-such-voice", DefaultRate, func([]int16) error { return nil }); err == nil {
		t.Error("an unknown voice was accepted")
	}
}

func TestPhonemes(t *testing.T) {
	cases := map[string]string{
		"Hello world":   "həlˈoʊ wˈɜːld",
		"The quick fox": "ðə kwˈɪk fˈɑːks",
	}
	for in, want := range cases {
		got, err := Phonemes(in, "en-us")
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Errorf("Phonemes(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestPoolMatchesInProcessAndRunsInParallel(t *testing.T) {
	p, err := NewPool(testExe(t), nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	want := collect(t, func(e func([]int16) error) error { return Synthesize("Testing the pool.", "en-us", DefaultRate, e) })
	var wg sync.WaitGroup
	results := make([][]int16, 4)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = collect(t, func(e func([]int16) error) error {
				return p.Synthesize(context.Background(), engine.Segment{Text: "Testing the pool.", Voice: "en-us", Speed: 1}, engine.Emit(e))
			})
		}()
	}
	wg.Wait()
	// espeak-ng output varies by a few samples with its internal state, so
	// compare lengths within 1% and require speech.
	for i, got := range results {
		if d := len(got) - len(want); d*100 > len(want) || -d*100 > len(want) || peak(got) < 3000 {
			t.Errorf("pool result %d: %d samples (peak %d), in-process %d", i, len(got), peak(got), len(want))
		}
	}
}

// TestPoolReplacesACrashedWorker: a worker killed while idle used to fail the
// next segment with "broken pipe"; it is now replaced before use (or the
// segment retried on the replacement, since none of its audio was sent).
func TestPoolReplacesACrashedWorker(t *testing.T) {
	p, err := NewPool(testExe(t), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	seg := engine.Segment{Text: "Still here.", Voice: "en-us", Speed: 1}
	for _, wait := range []time.Duration{50 * time.Millisecond, 0} {
		w := <-p.free
		w.cmd.Process.Signal(syscall.SIGKILL)
		time.Sleep(wait)
		p.free <- w
		s := collect(t, func(e func([]int16) error) error { return p.Synthesize(context.Background(), seg, engine.Emit(e)) })
		if peak(s) < 3000 {
			t.Errorf("wait %s: the segment after the crash produced no speech", wait)
		}
	}
	if n := len(p.PIDs()); n != 1 {
		t.Errorf("%d workers after two replacements, want 1", n)
	}
}

// TestPoolKillsAWorkerPastTheTimeLimit: a stopped worker is killed when the
// segment's limit signal closes, the segment fails with ErrSegmentTimeout and
// the next segment runs on a replacement.
func TestPoolKillsAWorkerPastTheTimeLimit(t *testing.T) {
	p, err := NewPool(testExe(t), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	old := p.PIDs()
	syscall.Kill(old[0], syscall.SIGSTOP)
	exceeded := make(chan struct{})
	ctx := engine.WithLimitSignal(context.Background(), exceeded)
	time.AfterFunc(300*time.Millisecond, func() { close(exceeded) })
	err = p.Synthesize(ctx, engine.Segment{Text: "Hung.", Voice: "en-us", Speed: 1}, func([]int16) error { return nil })
	if !errors.Is(err, engine.ErrSegmentTimeout) {
		t.Fatalf("segment on a stopped worker: %v, want ErrSegmentTimeout", err)
	}
	if now := p.PIDs(); len(now) != 1 || now[0] == old[0] {
		t.Errorf("workers %v after the kill, want one replacing %d", now, old[0])
	}
	s := collect(t, func(e func([]int16) error) error {
		return p.Synthesize(context.Background(), engine.Segment{Text: "Next.", Voice: "en-us", Speed: 1}, engine.Emit(e))
	})
	if peak(s) < 3000 {
		t.Error("no speech from the replacement")
	}
}

func TestPoolStopsEmittingWhenTheClientLeaves(t *testing.T) {
	p, err := NewPool(testExe(t), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	calls := 0
	gone := fmt.Errorf("client gone")
	err = p.Synthesize(context.Background(), engine.Segment{Text: strings.Repeat("A long sentence to speak. ", 5), Voice: "en-us", Speed: 1}, func([]int16) error {
		calls++
		return gone
	})
	if err != gone || calls != 1 {
		t.Errorf("err = %v after %d emits, want the emit error after 1", err, calls)
	}
	// The worker is still in step for the next segment.
	s := collect(t, func(e func([]int16) error) error {
		return p.Synthesize(context.Background(), engine.Segment{Text: "Next.", Voice: "en-us", Speed: 1}, engine.Emit(e))
	})
	if len(s) == 0 {
		t.Error("no audio after an abandoned segment")
	}
}

func TestWorkerIgnoresSIGTERM(t *testing.T) {
	cmd := exec.Command(testExe(t))
	cmd.Env = append(os.Environ(), RoleEnv+"="+RoleWorker)
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 9)
	if _, err := out.Read(buf); err != nil || buf[0] != frameReady {
		t.Fatalf("worker did not report ready: %v %q", err, buf)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	time.Sleep(100 * time.Millisecond)
	if err := cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("worker died on SIGTERM: %v", err)
	}
	in.Close() // closing stdin is how the parent stops it
	if err := cmd.Wait(); err != nil {
		t.Errorf("worker exit after stdin closed: %v", err)
	}
}

// BenchmarkEspeak compares the two ways to share a thread-unsafe library:
// one in-process synthesis at a time behind a lock, or a pool of worker
// processes. Each op synthesizes one sentence; 8 goroutines send them.
func BenchmarkEspeak(b *testing.B) {
	const text = "The quick brown fox jumps over the lazy dog."
	b.Run("in-process-serialized", func(b *testing.B) {
		b.SetParallelism(4)
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := Synthesize(text, DefaultVoice, DefaultRate, func([]int16) error { return nil }); err != nil {
					b.Error(err)
				}
			}
		})
	})
	for _, n := range []int{1, 2, 4} {
		b.Run(fmt.Sprintf("pool-%d", n), func(b *testing.B) {
			p, err := NewPool(testExe(b), nil, n)
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			b.ResetTimer()
			b.SetParallelism(4)
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					err := p.Synthesize(context.Background(), engine.Segment{Text: text, Voice: DefaultVoice, Speed: 1}, func([]int16) error { return nil })
					if err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}
