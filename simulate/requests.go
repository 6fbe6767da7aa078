package simulate

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// The request trace: one row per request, written by `tts-bench traffic import` (package traffic), read here
// so that every command that takes a trace CSV (simulate, plan, replay) reads it too. The file is text:
//
//	# speech-infra request trace v1
//	# start 2024-03-01T12:00:00.1234567Z
//	# any further comment lines (where the trace came from)
//	offset_s
//	0
//	0.0125
//	0.0125
//	1.5
//	# end 4 requests
//
// The first line is RequestTraceMagic exactly. "# start " gives the first request's time, RFC 3339 in UTC with
// up to 9 fractional digits. The column header offset_s follows the comments; each row after it is one
// request: its time in seconds since the start (a decimal number, up to 9 fractional digits), never before the
// row above it. The last line, "# end N requests", counts the rows: a trace cut short (a partial copy, or one
// read through a size limit such as MaxTraceBytes) is refused, never read as a shorter one. The trace lasts
// until the end of the second that holds the last request.
const (
	// RequestTraceMagic is the first line of a request trace.
	RequestTraceMagic = "# speech-infra request trace v1"
	// RequestTraceStartPrefix starts the comment line that holds the start time.
	RequestTraceStartPrefix = "# start "
	// RequestTraceColumn is the column header of the offsets.
	RequestTraceColumn = "offset_s"
	// RequestTraceEndPrefix starts the last line, which counts the requests: "# end 4 requests".
	RequestTraceEndPrefix = "# end "
)

// Requests is a request trace read whole into requests per second.
type Requests struct {
	// Name is where the trace came from (the file name).
	Name string
	// Start is the first request's time (UTC).
	Start time.Time
	// Comments are the comment lines after the start line, without their "# ".
	Comments []string
	// Count is the number of requests.
	Count int64
	// PerSecond holds the requests in each second since Start: PerSecond[i] in [i s, i+1 s).
	PerSecond []float64
}

// IsRequestTrace says whether head, the beginning of a file, is a request trace's (after an optional UTF-8
// byte-order mark).
func IsRequestTrace(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\uFEFF"))
	return bytes.HasPrefix(head, []byte(RequestTraceMagic+"\n")) || bytes.HasPrefix(head, []byte(RequestTraceMagic+"\r\n")) ||
		string(head) == RequestTraceMagic
}

// ReadRequests reads a request trace (the format above), streaming: memory grows with the trace's duration
// (one number per second, at most MaxTraceDuration), never with its number of requests. Errors name the line;
// reading stops after 20 of them.
func ReadRequests(name string, r io.Reader) (Requests, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	q := Requests{Name: name}
	var (
		line     int64
		errs     []error
		inRows   bool
		started  bool
		ended    bool
		prev     float64
		prevText string
	)
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s line %d: "+format, append([]any{name, line}, args...)...))
	}
	maxSeconds := MaxTraceDuration.Seconds()
	for len(errs) < 20 {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			line++
			return Requests{}, fmt.Errorf("%s line %d: longer than %d bytes: not a request trace row", name, line, br.Size())
		}
		if len(b) == 0 && err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return Requests{}, fmt.Errorf("read %s: %w", name, err)
		}
		line++
		b = bytes.TrimRight(b, "\r\n")
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\uFEFF"))
			if string(b) != RequestTraceMagic {
				return Requests{}, fmt.Errorf("%s line 1: %q is not %q: not a request trace (tts-bench traffic import writes them)", name, b, RequestTraceMagic)
			}
			continue
		}
		if !inRows {
			s := string(b)
			switch {
			case strings.HasPrefix(s, RequestTraceStartPrefix):
				t, perr := time.Parse(time.RFC3339Nano, strings.TrimSpace(strings.TrimPrefix(s, RequestTraceStartPrefix)))
				if perr != nil {
					fail("the start %q is not an RFC 3339 time (2024-03-01T12:00:00.1234567Z)", strings.TrimPrefix(s, RequestTraceStartPrefix))
					continue
				}
				q.Start, started = t.UTC(), true
			case strings.HasPrefix(s, "#"):
				q.Comments = append(q.Comments, strings.TrimSpace(strings.TrimPrefix(s, "#")))
			case strings.TrimSpace(s) == RequestTraceColumn:
				if !started {
					fail("the column header comes before the %q line: the trace has no start time", strings.TrimSpace(RequestTraceStartPrefix))
				}
				inRows = true
			case strings.TrimSpace(s) == "":
			default:
				fail("want the column header %q after the comment lines, got %q", RequestTraceColumn, s)
				inRows = true
			}
			continue
		}
		if len(b) == 0 {
			continue
		}
		if ended {
			fail("%q after the %q line: the end line is the last", b, strings.TrimSpace(RequestTraceEndPrefix))
			continue
		}
		if bytes.HasPrefix(b, []byte(RequestTraceEndPrefix)) {
			ended = true
			f := strings.Fields(strings.TrimPrefix(string(b), RequestTraceEndPrefix))
			if n, perr := strconv.ParseInt(f[0], 10, 64); len(f) != 2 || f[1] != "requests" || perr != nil {
				fail("%q is not \"# end N requests\"", b)
			} else if n != q.Count && len(errs) == 0 {
				fail("the end line counts %d requests, the trace has %d rows: it is damaged", n, q.Count)
			}
			continue
		}
		v, perr := strconv.ParseFloat(string(b), 64)
		if perr != nil || math.IsNaN(v) || v < 0 || v >= maxSeconds {
			fail("offset %q is not a number of seconds in [0, %g)", b, maxSeconds)
			continue
		}
		if v < prev {
			fail("offset %q comes before the previous row's %q: offsets must not decrease", b, prevText)
			continue
		}
		prev = v
		if len(errs) == 0 {
			prevText = string(b)
		}
		sec := int(v)
		for len(q.PerSecond) <= sec {
			q.PerSecond = append(q.PerSecond, 0)
		}
		q.PerSecond[sec]++
		q.Count++
	}
	if len(errs) > 0 {
		return Requests{}, errors.Join(errs...)
	}
	if !inRows {
		return Requests{}, fmt.Errorf("%s: no %q column header: the file ends in its comment lines", name, RequestTraceColumn)
	}
	if !ended {
		return Requests{}, fmt.Errorf("%s: the request trace stops before its %q line, after %d requests: it is cut short (a partial copy, or read through a size limit of %d bytes)",
			name, strings.TrimSpace(RequestTraceEndPrefix), q.Count, MaxTraceBytes)
	}
	if q.Count == 0 {
		return Requests{}, fmt.Errorf("%s: the request trace has no requests", name)
	}
	return q, nil
}

// Trace is the request trace as a rate trace at 1-s steps: each second's requests are its rate, consecutive
// seconds of the same rate one point. It fails when that takes more than MaxTracePoints points.
func (q Requests) Trace() (Trace, error) {
	t := Trace{Name: q.Name, Duration: time.Duration(len(q.PerSecond)) * time.Second}
	for i, v := range q.PerSecond {
		if n := len(t.Points); n > 0 && t.Points[n-1].RPS == v {
			continue
		}
		if len(t.Points) == MaxTracePoints {
			return Trace{}, fmt.Errorf("%s: the request trace at 1-s steps takes more than %d points (it lasts %s): cut it into shorter traces",
				q.Name, MaxTracePoints, t.Duration)
		}
		t.Points = append(t.Points, Point{At: time.Duration(i) * time.Second, RPS: v})
	}
	if err := t.Validate(); err != nil {
		return Trace{}, fmt.Errorf("%s: %w", q.Name, err)
	}
	return t, nil
}
