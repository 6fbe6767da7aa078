package harness

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// Main runs a benchmark program: run gets the command line's arguments and a context that SIGINT and SIGTERM
// cancel. An error exits as exitcode.Report says, naming name; -h (flag.ErrHelp: the usage is printed) exits 0.
func Main(name string, run func(ctx context.Context, args []string) error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		os.Exit(exitcode.Report(os.Stderr, name, err))
	}
}

// ParseFlags parses a program's command line with fs: a parse error is a usage error (-h gives flag.ErrHelp,
// its usage printed), and so is an argument, which onlyFlags explains ("every option is a flag").
func ParseFlags(fs *flag.FlagSet, args []string, onlyFlags string) error {
	if err := fs.Parse(args); err != nil {
		return exitcode.Usage(err)
	}
	if fs.NArg() > 0 {
		return exitcode.Usagef("unexpected argument %q: %s", fs.Arg(0), onlyFlags)
	}
	return nil
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

// StopTimeout bounds how long Process.Stop waits after SIGTERM before it kills (an emulator stops its
// instances first).
const StopTimeout = 40 * time.Second

// Process is a program this one started that serves HTTP on loopback (the inference container, the gateway).
type Process struct {
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// StartProcess starts cmd and returns once GET healthURL answers 200, within wait and ctx. A process that exits
// first, or does not answer in time, is stopped, and the error says which. With healthURL "" it returns once
// the process has started (the caller learns its readiness otherwise).
func StartProcess(ctx context.Context, cmd *exec.Cmd, healthURL string, wait time.Duration) (*Process, error) {
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	p := &Process{cmd: cmd, exited: make(chan struct{})}
	go func() { p.waitErr = cmd.Wait(); close(p.exited) }()
	if healthURL == "" {
		return p, nil
	}
	if err := p.waitHealthy(ctx, healthURL, wait); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Process) waitHealthy(ctx context.Context, url string, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			return fmt.Errorf("exited before %s answered 200: %v", url, p.waitErr)
		case <-ctx.Done():
			return fmt.Errorf("%s did not answer 200 within %s: %w", url, wait, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pid is the process id.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM (a server lets the requests in flight finish), waits up to StopTimeout, then kills; it is
// safe to call twice.
func (p *Process) Stop() {
	select {
	case <-p.exited:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(StopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.exited
	}
}
