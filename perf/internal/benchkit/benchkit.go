// Package benchkit is what the benchmark programs under perf share: the inference container binary
// and processes of it whose JSON request logs are collected, the file-descriptor limit, exact percentiles and
// gonum line charts.
package benchkit

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"sync"
	"syscall"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/containerbin"
)

// ContainerBinary returns $SPEECH_CONTAINER_BIN when set, else builds the container (cgo) into
// .cache/bench/speech-container and returns that.
func ContainerBinary(ctx context.Context) (string, error) { return containerbin.Path(ctx, "bench") }

// RequestLog is the part of the container's JSON request log line (container/README.md) the rows use.
type RequestLog struct {
	Msg       string  `json:"msg"`
	Outcome   string  `json:"outcome"`
	Status    int     `json:"status"`
	TotalMs   float64 `json:"total_ms"`
	TTFABMs   float64 `json:"ttfab_ms"`
	QueueWait float64 `json:"queue_wait_ms"`
}

// Container is a running inference container process.
type Container struct {
	// URL is its base URL on loopback.
	URL  string
	cmd  *exec.Cmd
	done chan error
	mu   sync.Mutex
	logs []RequestLog
}

// FreePort returns a free loopback TCP port.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w: check that loopback networking works", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// StartContainer runs bin serve with env (over the process's environment) on a free port and returns once
// /ping answers 200, within 30 s. Its request logs are collected (Logs); its stderr goes to stderr.
func StartContainer(ctx context.Context, bin string, env map[string]string, stderr io.Writer) (*Container, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(os.Environ(), "SAGEMAKER_BIND_TO_PORT="+strconv.Itoa(port))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("start the container: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the container %s: %w", bin, err)
	}
	c := &Container{URL: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, done: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Bytes()
			if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(`"msg":"request"`)) {
				continue
			}
			var l RequestLog
			if json.Unmarshal(line, &l) == nil {
				c.mu.Lock()
				c.logs = append(c.logs, l)
				c.mu.Unlock()
			}
		}
		io.Copy(io.Discard, out)
		c.done <- cmd.Wait()
	}()
	deadline := time.Now().Add(30 * time.Second)
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.URL+"/ping", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c, nil
			}
		}
		select {
		case err := <-c.done:
			return nil, fmt.Errorf("the container exited before it was ready: %v: see its stderr above", err)
		default:
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			c.Stop()
			return nil, fmt.Errorf("the container on port %d did not answer /ping 200 within 30s", port)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// LogCount is how many request logs have been collected.
func (c *Container) LogCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.logs)
}

// Logs returns the request logs collected from index from on.
func (c *Container) Logs(from int) []RequestLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from > len(c.logs) {
		return nil
	}
	return append([]RequestLog(nil), c.logs[from:]...)
}

// WaitLogs waits up to 5 s until at least n request logs have been collected (the log line follows the
// response) and returns how many there are.
func (c *Container) WaitLogs(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for c.LogCount() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return c.LogCount()
}

// Stop sends SIGTERM and waits up to 30 s, then kills the process.
func (c *Container) Stop() {
	if c.cmd.Process == nil {
		return
	}
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		c.cmd.Process.Kill()
		<-c.done
	}
}

// RaiseFDLimit raises the soft file-descriptor limit to the hard one and returns the soft limit now.
func RaiseFDLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}

// Percentile returns the exact p-th percentile (nearest rank, bench.Percentile) of values (not changed); NaN
// when empty.
func Percentile(values []float64, p float64) float64 {
	if len(values) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), values...)
	sort.Float64s(s)
	return bench.Percentile(s, p)
}

// Series is one line of a chart.
type Series struct {
	Name string
	XY   plotter.XYs
}

// Chart is a line chart of one or more series.
type Chart struct {
	Title, X, Y string
	// LogX draws the X axis logarithmically (concurrency 1 ... 1000).
	LogX   bool
	Series []Series
	// HLine, when not NaN, is a horizontal goal line named HLineName.
	HLine     float64
	HLineName string
}

var palette = []color.Color{
	color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}, color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff},
	color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}, color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff},
	color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff},
}

// WriteSVG draws c and writes it to path atomically.
func (c Chart) WriteSVG(path string) error {
	p := plot.New()
	p.Title.Text = c.Title
	p.X.Label.Text = c.X
	p.Y.Label.Text = c.Y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	if c.LogX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	minX, maxX := math.Inf(1), math.Inf(-1)
	for i, s := range c.Series {
		if len(s.XY) == 0 {
			continue
		}
		l, pts, err := plotter.NewLinePoints(s.XY)
		if err != nil {
			return fmt.Errorf("draw %s: series %s: %w", path, s.Name, err)
		}
		col := palette[i%len(palette)]
		l.Color, pts.Color = col, col
		pts.Shape = draw.CircleGlyph{}
		p.Add(l, pts)
		p.Legend.Add(s.Name, l, pts)
		for _, xy := range s.XY {
			minX, maxX = math.Min(minX, xy.X), math.Max(maxX, xy.X)
		}
	}
	if !math.IsNaN(c.HLine) && !math.IsInf(minX, 0) {
		g, err := plotter.NewLine(plotter.XYs{{X: minX, Y: c.HLine}, {X: maxX, Y: c.HLine}})
		if err == nil {
			g.Color = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
			g.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
			p.Add(g)
			p.Legend.Add(c.HLineName, g)
		}
	}
	wt, err := p.WriterTo(20*vg.Centimeter, 12*vg.Centimeter, "svg")
	if err != nil {
		return fmt.Errorf("draw %s: %w", path, err)
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return fmt.Errorf("draw %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write chart %s: %w", path, err)
	}
	return nil
}

// ErrInterrupted is returned when a run is interrupted.
var ErrInterrupted = errors.New("interrupted")

// Timed wraps a transport and keeps each successful request's TTFAB and full-response time (ms), per worker
// so the request path takes no lock. Build it with NewTimed for the step's concurrency.
type Timed struct {
	Inner       bench.Transport
	ttfab, resp [][]float64
	errs        []int
}

// NewTimed returns a Timed for up to c workers.
func NewTimed(inner bench.Transport, c int) *Timed {
	return &Timed{Inner: inner, ttfab: make([][]float64, c), resp: make([][]float64, c), errs: make([]int, c)}
}

// Name is the inner transport's name.
func (t *Timed) Name() string { return t.Inner.Name() }

// Worker wraps the inner transport's worker i.
func (t *Timed) Worker(i int) (bench.Sender, error) {
	if i >= len(t.errs) {
		return nil, fmt.Errorf("timed transport: worker %d of %d: build it with NewTimed for the step's concurrency", i, len(t.errs))
	}
	s, err := t.Inner.Worker(i)
	if err != nil {
		return nil, err
	}
	return &timedSender{inner: s, t: t, i: i}, nil
}

type timedSender struct {
	inner bench.Sender
	t     *Timed
	i     int
}

func (s *timedSender) Send(ctx context.Context, text string) (bench.StreamResult, error) {
	res, err := s.inner.Send(ctx, text)
	if err != nil {
		s.t.errs[s.i]++
		return res, err
	}
	s.t.resp[s.i] = append(s.t.resp[s.i], float64(res.End.Sub(res.Sent))/float64(time.Millisecond))
	s.t.ttfab[s.i] = append(s.t.ttfab[s.i], float64(res.TTFAB())/float64(time.Millisecond))
	return res, err
}

// Results returns the TTFABs, the full-response times and the failed count (read after the step).
func (t *Timed) Results() (ttfab, resp []float64, failed int) {
	for i := range t.errs {
		ttfab = append(ttfab, t.ttfab[i]...)
		resp = append(resp, t.resp[i]...)
		failed += t.errs[i]
	}
	return ttfab, resp, failed
}

// Step runs one closed-loop step of the load engine at concurrency c for d (no settle; all of it measured)
// through tr with a corpus of the one text, and returns its result.
func Step(ctx context.Context, tr bench.Transport, c int, d time.Duration, text string) (bench.StepResult, error) {
	corpus, err := bench.NewCorpus("benchkit", []string{text})
	if err != nil {
		return bench.StepResult{}, err
	}
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure = 0, d, d
	cfg.RequestTimeout, cfg.Grace = 10*time.Second, 10*time.Second
	cfg.SLO, cfg.MinRequests = time.Second, 1
	cfg.Transport, cfg.Corpus, cfg.RunID = tr, corpus, "benchkit"
	return bench.RunStep(ctx, cfg, c)
}
