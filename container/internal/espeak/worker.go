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
}

// Pool is the espeak engine: a fixed number of worker processes (the binary
// re-executed with RoleEnv=RoleWorker), each synthesizing one segment at a
// time, so segments run in parallel without sharing libespeak-ng's state.
// A worker that fails is replaced; the failure fails only its segment.
type Pool struct {
	exe  string
	args []string
	free chan *worker
	mu   sync.Mutex
	all  map[*worker]bool
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
	w := &worker{cmd: cmd, in: in, out: bufio.NewReaderSize(outPipe, 64*1024)}
	typ, payload, err := readFrame(w.out)
	if err != nil || typ != frameReady || len(payload) != 4 {
		p.kill(w)
		return nil, fmt.Errorf("espeak pool: worker did not report ready (see its stderr): %v", err)
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

func (p *Pool) kill(w *worker) {
	w.in.Close()
	if w.cmd.Process != nil {
		w.cmd.Process.Kill()
	}
	w.cmd.Wait()
	p.mu.Lock()
	delete(p.all, w)
	p.mu.Unlock()
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

// DefaultVoice implements engine.Engine.
func (p *Pool) DefaultVoice() string { return DefaultVoice }

// Synthesize implements engine.Engine: it takes a free worker, sends it the
// segment and forwards its audio frames to emit. When emit fails (the client
// left) the rest of the segment is read and dropped so the worker stays in
// step; a worker that breaks the protocol is replaced.
func (p *Pool) Synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) error {
	var w *worker
	select {
	case w = <-p.free:
	case <-ctx.Done():
		return ctx.Err()
	}
	req, _ := json.Marshal(workerRequest{Text: seg.Text, Voice: seg.Voice, Rate: RateFor(seg.Speed)})
	err := p.run(w, append(req, '\n'), emit)
	var pe *protocolError
	if errors.As(err, &pe) {
		p.kill(w)
		nw, serr := p.start()
		if serr != nil {
			// Keep the slot count: try again on the next request.
			go p.refill()
			return fmt.Errorf("%w; replacing the worker failed: %v", err, serr)
		}
		w = nw
	}
	p.free <- w
	return err
}

func (p *Pool) refill() {
	if w, err := p.start(); err == nil {
		p.free <- w
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

// Close stops every worker.
func (p *Pool) Close() error {
	p.mu.Lock()
	ws := make([]*worker, 0, len(p.all))
	for w := range p.all {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.in.Close()
		w.cmd.Wait()
		p.mu.Lock()
		delete(p.all, w)
		p.mu.Unlock()
	}
	return nil
}
