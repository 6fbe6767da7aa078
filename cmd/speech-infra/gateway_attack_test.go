package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// gatewayNofileEnv, set in the environment of this test binary run as the CLI (SPEECH_INFRA_TEST_RUN_CLI=1),
// is the descriptor limit, soft and hard, the process takes before anything else runs: a gateway process as
// `prlimit --nofile=N:N` would start it.
const gatewayNofileEnv = "SPEECH_INFRA_TEST_NOFILE"

func init() {
	v := os.Getenv(gatewayNofileEnv)
	if v == "" {
		return
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err == nil {
		err = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: n, Max: n})
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%s: %v\n", gatewayNofileEnv, v, err)
		os.Exit(1)
	}
}

// attackNofile is the descriptor limit of the gateway processes the attacks are run against, and attackSockets
// the sockets each attack opens: more than the process has descriptors.
const (
	attackNofile  = 128
	attackSockets = 130
)

// attackGuard bounds every wait of the attack tests: it only stops a hang (a socket the gateway holds, a
// normal client never served); nothing is asserted about how long anything took.
const attackGuard = 30 * time.Second

// withGatewayDefaults gives a gatewayOpts built in a test the flags' defaults it leaves unset.
func withGatewayDefaults(o *gatewayOpts) {
	for _, d := range []struct {
		v   *time.Duration
		def time.Duration
	}{{&o.headerTimeout, defaultGatewayHeaderTimeout}, {&o.bodyTimeout, defaultGatewayBodyTimeout}, {&o.writeStall, defaultGatewayWriteStall}, {&o.idleTimeout, defaultGatewayIdleTimeout}} {
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if o.maxConnsPerClient == 0 {
		o.maxConnsPerClient = defaultGatewayConnsPerClient
	}
	if o.healthCache == 0 {
		o.healthCache = defaultGatewayHealthCache
	}
}

// syncBuffer is a log several goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// gatewayProc is `speech-infra gateway` running as a process of its own (this test binary as the CLI).
type gatewayProc struct {
	// addr is where it listens (host:port); log is its stderr so far.
	addr string
	log  *syncBuffer
}

// startGatewayProcess starts `speech-infra gateway args...` with the descriptor limit nofile and env added to
// this process's environment, and returns once it serves. The test's end stops it.
func startGatewayProcess(t *testing.T, nofile int, env []string, args ...string) *gatewayProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, append([]string{"gateway"}, args...)...)
	cmd.Env = append(append(os.Environ(), "SPEECH_INFRA_TEST_RUN_CLI=1", gatewayNofileEnv+"="+strconv.Itoa(nofile)), env...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &gatewayProc{log: &syncBuffer{}}
	serving := make(chan string, 1)
	exited := make(chan struct{})
	var waitErr error
	go func() {
		re := regexp.MustCompile(`^gateway: serving http://(\S+)/v1 `)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			fmt.Fprintln(p.log, sc.Text())
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				serving <- m[1]
			}
		}
		io.Copy(io.Discard, stderr)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(attackGuard):
			cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", p.log)
		}
	})
	select {
	case p.addr = <-serving:
		return p
	case <-exited:
		t.Fatalf("the gateway exited before serving (%v):\n%s", waitErr, p.log)
	case <-time.After(attackGuard):
		t.Fatalf("the gateway did not serve within %s:\n%s", attackGuard, p.log)
	}
	return nil
}

// dialFrom opens a connection to addr from the loopback address from (all of 127.0.0.0/8 is the loopback
// interface on Linux), with a receive buffer of rcvbuf bytes when rcvbuf > 0 (set before connecting, so
// the window the client offers is that small).
func dialFrom(addr, from string, rcvbuf int) (net.Conn, error) {
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}, Timeout: attackGuard}
	if rcvbuf > 0 {
		d.Control = func(_, _ string, c syscall.RawConn) error {
			var serr error
			if err := c.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, rcvbuf)
			}); err != nil {
				return err
			}
			return serr
		}
	}
	return d.Dial("tcp", addr)
}

// gatewayHolds counts the TCP connections to the gateway at addr from the IP address from that a process still
// holds, in /proc/net/tcp: a connection the gateway has closed has no descriptor any more (inode 0), even
// while the kernel still delivers what was written to it.
func gatewayHolds(t *testing.T, addr, from string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		t.Fatalf("the attack tests read the gateway's connections from /proc/net/tcp (Linux): %v", err)
	}
	host, port, _ := net.SplitHostPort(addr)
	p, _ := strconv.Atoi(port)
	hexIP := func(s string) string {
		ip := net.ParseIP(s).To4()
		return fmt.Sprintf("%02X%02X%02X%02X", ip[3], ip[2], ip[1], ip[0])
	}
	local, remote := fmt.Sprintf("%s:%04X", hexIP(host), p), hexIP(from)+":"
	n := 0
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) >= 10 && f[1] == local && strings.HasPrefix(f[2], remote) && f[9] != "0" {
			n++
		}
	}
	return n
}

// waitReleased waits until the gateway at addr holds no connection from the addresses from, or the guard
// passes (an error then).
func waitReleased(t *testing.T, addr string, from ...string) {
	t.Helper()
	guard := time.Now().Add(attackGuard)
	for {
		held := 0
		for _, f := range from {
			held += gatewayHolds(t, addr, f)
		}
		if held == 0 {
			return
		}
		if time.Now().After(guard) {
			t.Errorf("the gateway still holds %d attacking connection(s) after the guard (%s)", held, attackGuard)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// socketOutcome is what became of one attacking socket.
type socketOutcome struct {
	// status is the answer's status, 0 if the connection was closed without one.
	status int
	// body is the answer's body (up to 4 KiB); truncated says it ended before its end (a stream cut).
	body      string
	truncated bool
	// held: by the guard deadline the gateway had neither answered and closed the connection nor closed it.
	held bool
}

func (o socketOutcome) String() string {
	switch {
	case o.held:
		return fmt.Sprintf("held (status %d)", o.status)
	case o.status == 0:
		return "closed without an answer"
	case o.truncated:
		return fmt.Sprintf("%d cut short, then closed", o.status)
	}
	return fmt.Sprintf("%d, then closed", o.status)
}

// readOutcome reads what the gateway does with c until it closes it, or until guard.
func readOutcome(c net.Conn, guard time.Time) socketOutcome {
	c.SetReadDeadline(guard)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return socketOutcome{held: errors.Is(err, os.ErrDeadlineExceeded)}
	}
	var body bytes.Buffer
	_, err = io.Copy(&limitedWriter{&body, 4096}, resp.Body)
	o := socketOutcome{status: resp.StatusCode, body: body.String()}
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		o.held = true
		return o
	case err != nil:
		o.truncated = true
	}
	// After its answer the connection must close.
	if _, err := br.ReadByte(); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
		o.held = true
	}
	return o
}

// limitedWriter keeps the first n bytes written to it and discards the rest.
type limitedWriter struct {
	b *bytes.Buffer
	n int
}

func (w *limitedWriter) Write(p []byte) (int, error) {
	if room := w.n - w.b.Len(); room > 0 {
		w.b.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// speak is a normal client's speech request through the gateway at addr, from 127.0.0.1: the status and the
// audio bytes it got; err for a connection the gateway closed or a body cut short.
func speak(addr, key string) (status, audio int, err error) {
	body, _ := json.Marshal(map[string]string{"model": "espeak-ng", "voice": "en-us", "response_format": "pcm", "input": "A normal client is served."})
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/audio/speech", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	client := &http.Client{Timeout: attackGuard, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, int(n), err
}

// speakUntilServed repeats speak, as an OpenAI SDK retries 429 and a refused connection, until it is served
// or the guard passes; it counts the statuses and connection errors it met on the way.
func speakUntilServed(t *testing.T, addr, key string) (audio int, met map[string]int) {
	t.Helper()
	met = map[string]int{}
	guard := time.Now().Add(attackGuard)
	for time.Now().Before(guard) {
		status, n, err := speak(addr, key)
		switch {
		case err == nil && status == http.StatusOK && n > 0:
			return n, met
		case status != 0 && status != http.StatusTooManyRequests:
			t.Fatalf("a normal client got %d (%d bytes, %v) after %v", status, n, err, met)
		case err != nil:
			met["connection closed ("+connErrKind(err)+")"]++
		default:
			met[strconv.Itoa(status)]++
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("a normal client was not served within %s (the guard); it met %v", attackGuard, met)
	return 0, met
}

// connErrKind names a client's connection error without its addresses.
func connErrKind(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, io.EOF), strings.Contains(err.Error(), "server closed idle connection"):
		return "EOF"
	case errors.Is(err, os.ErrDeadlineExceeded), strings.Contains(err.Error(), "Timeout"):
		return "timeout"
	}
	return err.Error()
}

// gatewayEmulatorEndpoint is the emulator's espeak endpoint the attacked gateways serve.
const gatewayEmulatorEndpoint = "speech-espeak-ng"

// Attacks on a gateway process with 128 descriptors, each of 130 sockets from 127.0.0.0/8, while a normal
// client on 127.0.0.1 asks for speech:
//
//   - stalled bodies (Content-Length: 100, 10 bytes sent, then nothing), with no key on the gateway and with
//     one (the attacker sends none), from one address and from 130: each stalled socket gets its answer
//     (408 once --body-timeout passes, 401 at once, or 429 when the streams are taken) and is closed, or is
//     closed as soon as it is accepted (over --max-conns-per-client or --max-conns); the gateway never runs
//     out of descriptors; the normal client is served, from the first try when the attack comes from one
//     address;
//   - clients that post 4,900 characters with 4-KiB receive buffers and never read, holding every one of
//     --max-streams 8: each stream is cut once a write makes no progress for --write-stall-timeout, which the
//     gateway logs as the cause, its slot is freed, and the normal client (retrying 429, as the SDKs do) is
//     served.
func TestGatewayUnderAttack(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, gatewayEmulatorEndpoint, emulatortest.InService())
	common := []string{"espeak-ng", "--local", "--state-dir", e.StateDir, "--endpoint", gatewayEmulatorEndpoint, "--port", "0", "--shutdown-grace", "1s"}
	const key = "0123456789abcdef0123456789abcdef"

	for _, c := range []struct {
		name string
		key  bool
		// from is the source address of attacking socket i.
		from func(i int) string
		// answers are the statuses a stalled socket may get before its connection closes.
		answers []int
		// refusal is the limit the log names for the sockets closed at once.
		refusal string
		// firstTry: the normal client is served at its first try, while the attack holds what it can.
		firstTry bool
	}{
		{"stalled bodies/no key/one address", false, func(int) string { return "127.0.0.2" }, []int{408}, "--max-conns-per-client", true},
		{"stalled bodies/key/one address", true, func(int) string { return "127.0.0.2" }, []int{401}, "--max-conns-per-client", true},
		{"stalled bodies/no key/130 addresses", false, func(i int) string { return fmt.Sprintf("127.0.1.%d", i+1) }, []int{408, 429}, "--max-conns", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			args := append(append([]string{}, common...), "--max-streams", "32", "--max-conns-per-client", "16", "--body-timeout", "3s")
			var env []string
			normalKey := ""
			if c.key {
				args = append(args, "--api-key-env", "GATEWAY_ATTACK_KEY")
				env = append(env, "GATEWAY_ATTACK_KEY="+key)
				normalKey = key
			}
			g := startGatewayProcess(t, attackNofile, env, args...)
			if !strings.Contains(g.log.String(), "at most 64 connections") {
				t.Fatalf("with 128 descriptors and --max-streams 32 the gateway should allow 128 - 32 - 32 = 64 connections:\n%s", g.log)
			}

			const stalled = "POST /v1/audio/speech HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n" + `{"input":"`
			var socks []net.Conn
			for i := range attackSockets {
				conn, err := dialFrom(g.addr, c.from(i), 0)
				if err != nil {
					t.Fatalf("attacking socket %d: %v", i, err)
				}
				defer conn.Close()
				conn.Write([]byte(stalled)) // a socket already closed by the gateway fails here: its outcome says so
				socks = append(socks, conn)
			}

			// The attack is in place: a normal client asks for speech.
			if c.firstTry {
				status, n, err := speak(g.addr, normalKey)
				if err != nil || status != http.StatusOK || n == 0 {
					t.Errorf("a normal client during the attack: %d, %d bytes of audio, %v; want 200 with audio", status, n, err)
				}
			} else {
				n, met := speakUntilServed(t, g.addr, normalKey)
				t.Logf("a normal client during the attack: served %d bytes of audio after %v", n, met)
			}

			// The gateway lets go of every attacking connection (without reading from them: a read here would
			// be a client that reads), then each socket shows what it got.
			var from []string
			for i := range attackSockets {
				if i == 0 || c.from(i) != c.from(i-1) {
					from = append(from, c.from(i))
				}
			}
			waitReleased(t, g.addr, from...)
			guard := time.Now().Add(attackGuard)
			counts := map[string]int{}
			for i, conn := range socks {
				o := readOutcome(conn, guard)
				counts[o.String()]++
				answered := false
				for _, s := range c.answers {
					answered = answered || o.status == s
				}
				switch {
				case o.held:
					t.Errorf("socket %d from %s: %s: the gateway still holds it after the guard", i, c.from(i), o)
				case o.status != 0 && !answered:
					t.Errorf("socket %d from %s: %s (%q); want one of %v, or closed without an answer", i, c.from(i), o, o.body, c.answers)
				case strings.Contains(o.body, "127.0.0.") || strings.Contains(o.body, "tcp"):
					t.Errorf("socket %d: the answer tells the client a socket address: %s", i, o.body)
				}
			}
			t.Logf("outcomes of the %d stalled sockets: %v", attackSockets, counts)
			if counts["closed without an answer"] == 0 || counts["closed without an answer"] == attackSockets {
				t.Errorf("outcomes %v: want some sockets answered and the rest closed at once", counts)
			}
			log := g.log.String()
			if !strings.Contains(log, "as soon as they were accepted") || !strings.Contains(log, "("+c.refusal+")") {
				t.Errorf("the log does not say a connection was closed at once over %s", c.refusal)
			}
			if strings.Contains(log, "too many open files") {
				t.Errorf("the gateway ran out of descriptors")
			}
			// Once the attack is answered the gateway serves as before.
			if status, n, err := speak(g.addr, normalKey); err != nil || status != http.StatusOK || n == 0 {
				t.Errorf("a normal client after the attack: %d, %d bytes of audio, %v", status, n, err)
			}
		})
	}

	t.Run("never reading", func(t *testing.T) {
		g := startGatewayProcess(t, attackNofile, nil, append(append([]string{}, common...),
			"--max-streams", "8", "--max-conns-per-client", "16", "--write-stall-timeout", "1s")...)
		text := strings.Repeat("Nobody reads this stream. ", 200)[:4900]
		body, _ := json.Marshal(map[string]string{"model": "espeak-ng", "voice": "en-us", "response_format": "pcm", "input": text})
		req := fmt.Sprintf("POST /v1/audio/speech HTTP/1.1\r\nHost: gateway\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
		var socks []net.Conn
		for i := range attackSockets {
			conn, err := dialFrom(g.addr, "127.0.0.2", 4096)
			if err != nil {
				t.Fatalf("attacking socket %d: %v", i, err)
			}
			defer conn.Close()
			conn.Write([]byte(req))
			socks = append(socks, conn)
		}

		n, met := speakUntilServed(t, g.addr, "")
		t.Logf("a normal client during the attack: served %d bytes of audio after %v", n, met)

		// Every stream is cut, without a byte read from the attacking sockets; then each shows what it got.
		waitReleased(t, g.addr, "127.0.0.2")
		guard := time.Now().Add(attackGuard)
		counts := map[string]int{}
		cut := 0
		for i, conn := range socks {
			o := readOutcome(conn, guard)
			counts[o.String()]++
			switch {
			case o.held:
				t.Errorf("socket %d: %s: the gateway still holds it after the guard", i, o)
			case o.status == http.StatusOK && o.truncated:
				cut++
			case o.status != 0 && o.status != http.StatusTooManyRequests:
				t.Errorf("socket %d: %s (%q); want a stream cut short, 429, or closed without an answer", i, o, o.body)
			}
		}
		t.Logf("outcomes of the %d never-reading sockets: %v", attackSockets, counts)
		log := g.log.String()
		if stalls := strings.Count(log, "the client stopped reading"); cut == 0 || stalls != cut {
			t.Errorf("%d streams were cut short, the log names %d clients that stopped reading; want as many, at least one", cut, stalls)
		}
		if !strings.Contains(log, "(--max-conns-per-client)") {
			t.Errorf("the log does not say a connection was closed at once over --max-conns-per-client")
		}
		if strings.Contains(log, "too many open files") {
			t.Errorf("the gateway ran out of descriptors")
		}
	})
}

// A gateway started in this process, its log and its base URL; the test's end stops it.
func startGatewayInProcess(t *testing.T, o *gatewayOpts) (base string, log *syncBuffer) {
	t.Helper()
	withGatewayDefaults(o)
	log = &syncBuffer{}
	o.stderr, o.grace = log, time.Second
	if o.getenv == nil {
		o.getenv = os.Getenv
	}
	addr := make(chan string, 1)
	o.ready = func(a string) { addr <- a }
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Execute(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(attackGuard):
			t.Errorf("the gateway did not stop within %s", attackGuard)
		}
	})
	select {
	case a := <-addr:
		return "http://" + a + "/v1", log
	case err := <-done:
		t.Fatalf("gateway: %v\n%s", err, log)
	case <-time.After(attackGuard):
		t.Fatalf("the gateway did not serve within %s", attackGuard)
	}
	return "", nil
}
