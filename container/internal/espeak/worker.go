package espeak

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"sync"
	"syscall"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/audio"
	"github.com/speech-infra/speech-infra/container/internal/engine"
)

// RoleEnv is the environment variable that makes the binary run as an espeak
// worker (value RoleWorker) instead of its normal command line.
const RoleEnv = "SPEECH_CONTAINER_ROLE"

// RoleWorker is RoleEnv's value for an espeak worker process.
const RoleWorker = "espeak-worker"

// Frame types of the worker protocol (worker to parent): each frame is one
// type byte, a little-endian uint32 payload length, and the payload.
const (
	frameReady = 'R' // payload: uint32 sample rate; sent once at start
	frameAudio = 'A' // payload: PCM16 little-endian samples
	frameEnd   = 'E' // segment done; empty payload
	frameError = 'X' // segment failed; payload: message
)

// workerRequest is one segment sent from the parent to a worker, one JSON
// object per line.
type workerRequest struct {
	Text  string `json:"text"`
	Voice string `json:"voice"`
	Rate  int    `json:"rate"`
}

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	hdr := make([]byte, 5, 5+len(payload))
	hdr[0] = typ
	binary.LittleEndian.PutUint32(hdr[1:], uint32(len(payload)))
	_, err := w.Write(append(hdr, payload...))
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[1:])
	if n > 64<<20 {
		return 0, nil, fmt.Errorf("espeak worker: frame of %d bytes is too large", n)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return hdr[0], p, nil
}

// RunWorker serves segments read from in (one JSON request per line) and
// writes audio frames to out until in ends. It ignores SIGTERM and SIGINT: the
// parent decides when a worker stops (by closing its stdin), so a signal sent
// to the whole process group cannot cut off requests the parent is draining.
func RunWorker(in io.Reader, out io.Writer) error {
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT)
	if err := Init(); err != nil {
		return err
	}
	bw := bufio.NewWriter(out)
	rate := binary.LittleEndian.AppendUint32(nil, SampleRate)
	if err := writeFrame(bw, frameReady, rate); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64*1024), 16<<20)
	for sc.Scan() {
		var req workerRequest
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			return fmt.Errorf("espeak worker: bad request line: %w", err)
		}
		err := Synthesize(req.Text, req.Voice, req.Rate, func(s []int16) error {
			if err := writeFrame(bw, frameAudio, audio.PCM16Bytes(nil, s)); err != nil {
				return err
			}
			return bw.Flush()
		})
		if err != nil {
			err = writeFrame(bw, frameError, []byte(err.Error()))
		} else {
			err = writeFrame(bw, frameEnd, nil)
		}
		if err != nil {
			return err
		}
		if err := bw.Flush(); err != nil {
			return err
		}
	}
	return sc.Err()
}

// worker is one running worker process seen from the parent.
type worker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
	// exited closes when the process has ended (cmd.Wait returned).
	exited chan struct{}
	once   sync.Once
}

// StartTimeout bounds how long a new worker may take to report ready.
const StartTimeout = 10 * time.Second

// Pool is the espeak engine: a fixed number of worker processes (the binary
// re-executed with RoleEnv=RoleWorker), each synthesizing one segment at a
// time, so segments run in parallel without sharing libespeak-ng's state.
// A worker that fails is replaced; the failure fails only its segment. A
// worker found dead before use (killed while idle) is replaced first, and a
// segment whose worker died before any of its audio was passed on is retried
// once on the replacement. A worker still busy when the segment's time limit
// passes (engine.LimitExceeded) is killed and replaced.
type Pool struct {
	exe    string
	args   []string
	free   chan *worker
	mu     sync.Mutex
	all    map[*worker]bool
	closed bool
}

// NewPool starts n workers by running exe with args and RoleEnv=RoleWorker,
// and waits until each reports ready.
func NewPool(exe string, args []string, n int) (*Pool, error) {
	if n < 1 {
		return nil, fmt.Errorf("espeak pool: ENGINE_WORKERS must be at least 1, got %d", n)
	}
	p := &Pool{exe: exe, args: args, free: make(chan *worker, n), all: map[*worker]bool{}}
	for range n {
		w, err := p.start()
		if err != nil {
			p.Close()
			return nil, err
		}
		p.free <- w
	}
	return p, nil
}

func (p *Pool) start() (*worker, error) {
	cmd := exec.Command(p.exe, p.args...)
	cmd.Env = append(os.Environ(), RoleEnv+"="+RoleWorker)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("espeak pool: start worker %s: %w", p.exe, err)
	}
	w := &worker{cmd: cmd, in: in, out: bufio.NewReaderSize(outPipe, 64*1024), exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(w.exited)
	}()
	// A worker that never reports ready is killed, which ends the read.
	t := time.AfterFunc(StartTimeout, func() { cmd.Process.Kill() })
	typ, payload, err := readFrame(w.out)
	t.Stop()
	if err != nil || typ != frameReady || len(payload) != 4 {
		p.kill(w)
		return nil, fmt.Errorf("espeak pool: worker did not report ready within %s (see its stderr): %v", StartTimeout, err)
	}
	if rate := binary.LittleEndian.Uint32(payload); rate != SampleRate {
		p.kill(w)
		return nil, fmt.Errorf("espeak pool: worker sample rate %d, want %d", rate, SampleRate)
	}
	p.mu.Lock()
	p.all[w] = true
	p.mu.Unlock()
	return w, nil
}

// kill ends w's process (SIGKILL also ends a stopped one) and waits for it.
func (p *Pool) kill(w *worker) {
	w.once.Do(func() {
		w.in.Close()
		w.cmd.Process.Kill()
		<-w.exited
		p.mu.Lock()
		delete(p.all, w)
		p.mu.Unlock()
	})
}

// replace kills w and starts its replacement. When the start fails it returns
// nil, and refill keeps trying in the background so the pool keeps its size.
func (p *Pool) replace(w *worker) (*worker, error) {
	p.kill(w)
	nw, err := p.start()
	if err != nil {
		go p.refill()
		return nil, err
	}
	return nw, nil
}

// PIDs returns the process ids of the running workers.
func (p *Pool) PIDs() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var pids []int
	for w := range p.all {
		pids = append(pids, w.cmd.Process.Pid)
	}
	sort.Ints(pids)
	return pids
}

// Name implements engine.Engine.
func (p *Pool) Name() string { return "espeak" }

// SampleRate implements engine.Engine.
func (p *Pool) SampleRate() int { return SampleRate }

// Voices implements engine.Engine.
func (p *Pool) Voices() []string {
	v := append([]string(nil), Voices...)
	sort.Strings(v)
	return v
}

// VoiceLanguage implements engine.VoiceLanguager: an espeak-ng voice name
// is its language.
func (p *Pool) VoiceLanguage(name string) string { return name }

// DefaultVoice implements engine.Engine.
func (p *Pool) DefaultVoice() string { return DefaultVoice }

// Synthesize implements engine.Engine: it takes a free worker, sends it the
// segment and forwards its audio frames to emit. When emit fails (the client
// left) the rest of the segment is read and dropped so the worker stays in
// step; a worker that breaks the protocol is replaced, and the segment is
// retried once on the replacement when none of its audio was passed on yet.
func (p *Pool) Synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) error {
	var w *worker
	select {
	case w = <-p.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	// Put back what we hold however we leave (nil: refill owns the slot).
	defer func() {
		if w != nil {
			p.free <- w
		}
	}()
	select {
	case <-w.exited: // died while idle: replace it before use
		nw, err := p.replace(w)
		w = nw
		if err != nil {
			return fmt.Errorf("espeak worker had exited while idle; replacing it failed: %w", err)
		}
	default:
	}
	req, _ := json.Marshal(workerRequest{Text: seg.Text, Voice: seg.Voice, Rate: RateFor(seg.Speed)})
	req = append(req, '\n')
	emitted := false
	counted := func(s []int16) error {
		emitted = true
		return emit(s)
	}
	for attempt := 0; ; attempt++ {
		err := p.runLimited(ctx, w, req, counted)
		var pe *protocolError
		if !errors.As(err, &pe) {
			return err
		}
		limited := false
		select {
		case <-engine.LimitExceeded(ctx):
			limited = true
			err = fmt.Errorf("espeak worker killed after the segment time limit: %w", engine.ErrSegmentTimeout)
		default:
		}
		nw, serr := p.replace(w)
		w = nw
		if serr != nil {
			return fmt.Errorf("%w; replacing the worker failed: %v", err, serr)
		}
		if limited || emitted || attempt > 0 || ctx.Err() != nil {
			return err
		}
	}
}

// runLimited is run, with w killed (ending run with a protocol error) if the
// segment's time limit passes first.
func (p *Pool) runLimited(ctx context.Context, w *worker, req []byte, emit engine.Emit) error {
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-engine.LimitExceeded(ctx):
			w.cmd.Process.Kill()
		case <-stop:
		}
	}()
	return p.run(w, req, emit)
}

func (p *Pool) refill() {
	for {
		p.mu.Lock()
		closed := p.closed
		p.mu.Unlock()
		if closed {
			return
		}
		if w, err := p.start(); err == nil {
			p.free <- w
			return
		} else {
			fmt.Fprintln(os.Stderr, "speech-container: espeak pool: start a replacement worker:", err)
		}
		time.Sleep(time.Second)
	}
}

// protocolError marks a worker that must be replaced.
type protocolError struct{ err error }

func (e *protocolError) Error() string { return "espeak worker failed: " + e.err.Error() }

func (p *Pool) run(w *worker, req []byte, emit engine.Emit) error {
	if _, err := w.in.Write(req); err != nil {
		return &protocolError{err}
	}
	var emitErr error
	for {
		typ, payload, err := readFrame(w.out)
		if err != nil {
			return &protocolError{err}
		}
		switch typ {
		case frameAudio:
			if emitErr == nil {
				s := make([]int16, len(payload)/2)
				for i := range s {
					s[i] = int16(binary.LittleEndian.Uint16(payload[2*i:]))
				}
				emitErr = emit(s)
			}
		case frameEnd:
			return emitErr
		case frameError:
			return fmt.Errorf("espeak-ng: %s", payload)
		default:
			return &protocolError{fmt.Errorf("unknown frame type %q", typ)}
		}
	}
}

// Close stops every worker: stdin closed, then SIGKILL for one that has not
// ended within a second (a hung or stopped worker).
func (p *Pool) Close() error {
	p.mu.Lock()
	p.closed = true
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.in.Close()
		select {
		case <-w.exited:
		case <-time.After(time.Second):
		}
		p.kill(w)
	}
	return nil
}
