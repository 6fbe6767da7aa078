package app

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// SocketSendBuffer is the kernel send buffer asked for on each accepted
// connection. Linux grows an unset buffer to about 4 MB, which a client that
// stops reading pins in kernel memory per connection; 256 KiB still carries
// far more than real-time audio (48 KB/s at 24 kHz) at any sane round trip.
const SocketSendBuffer = 256 << 10

// NewHTTPServer returns the http.Server for srv with every connection bound
// of cfg: the headers within HEADER_READ_TIMEOUT, the whole request within
// that plus BODY_READ_TIMEOUT (the handler also bounds the body from its own
// start and lifts the deadline once the body is read), a response write that
// makes no progress for WRITE_STALL_TIMEOUT (the handler renews it per write),
// and an idle keep-alive connection for IDLE_TIMEOUT.
func NewHTTPServer(cfg Config, h http.Handler) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       cfg.HeaderTimeout + cfg.BodyTimeout,
		WriteTimeout:      cfg.StallTimeout,
		IdleTimeout:       cfg.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// tooManyConnectionsBody is the body of the raw 503 written to a connection
// over MAX_CONNECTIONS before it is closed.
const tooManyConnectionsBody = `{"error":"too_many_connections","message":"this instance has MAX_CONNECTIONS open; retry on another"}` + "\n"

var tooManyConnections = fmt.Sprintf("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
	len(tooManyConnectionsBody), tooManyConnectionsBody)

// LimitListener accepts at most max connections at once. One more is answered
// with 503 too_many_connections and closed, rather than left waiting in the
// kernel's backlog; but when its request is a health check (GET or HEAD
// /ping), ping answers it, so idle connections filling the limit cannot make
// the platform think the instance unhealthy. ping may be nil (always 503).
func LimitListener(ln net.Listener, max int, logf func(string, ...any), ping func() (int, []byte)) net.Listener {
	return &limitListener{Listener: ln, max: int64(max), logf: logf, ping: ping}
}

// overLimitWait bounds how long a connection over the limit may take to send
// its request line before it is answered 503 and closed.
const overLimitWait = time.Second

// answerOverLimit answers a connection over the limit: /ping as the server
// would, anything else 503 too_many_connections.
func (l *limitListener) answerOverLimit(c net.Conn) {
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(overLimitWait))
	if l.ping != nil {
		line, err := bufio.NewReaderSize(io.LimitReader(c, 1024), 1024).ReadString('\n')
		// The answer gets a second of its own, however long the request line took.
		c.SetWriteDeadline(time.Now().Add(overLimitWait))
		method, rest, _ := strings.Cut(line, " ")
		target, _, _ := strings.Cut(rest, " ")
		if err == nil && (method == http.MethodGet || method == http.MethodHead) && target == "/ping" {
			status, body := l.ping()
			head := fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", status, http.StatusText(status), len(body))
			if method == http.MethodHead {
				body = nil
			}
			c.Write(append([]byte(head), body...))
			return
		}
	}
	c.SetWriteDeadline(time.Now().Add(overLimitWait))
	c.Write([]byte(tooManyConnections))
}

type limitListener struct {
	net.Listener
	max      int64
	open     atomic.Int64
	refused  atomic.Int64
	lastWarn atomic.Int64
	logf     func(string, ...any)
	ping     func() (int, []byte)
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			tc.SetWriteBuffer(SocketSendBuffer)
		}
		if l.open.Add(1) > l.max {
			l.open.Add(-1)
			n := l.refused.Add(1)
			if now := time.Now().Unix(); l.lastWarn.Swap(now) != now {
				l.logf("refused a connection over MAX_CONNECTIONS=%d (%d refused so far)", l.max, n)
			}
			go l.answerOverLimit(c)
			continue
		}
		return &countedConn{Conn: c, l: l}, nil
	}
}

// countedConn gives its place back once, on its first Close.
type countedConn struct {
	net.Conn
	l    *limitListener
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.open.Add(-1) })
	return err
}
