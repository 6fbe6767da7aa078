package emulator

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

// logGroup is the CloudWatch Logs group SageMaker writes an endpoint's container output to.
func logGroup(endpoint string) string { return "/aws/sagemaker/Endpoints/" + endpoint }

type logEvent struct {
	T int64  `json:"t"` // milliseconds since the epoch
	M string `json:"m"`
}

type logStream struct {
	name    string
	created int64
	events  []logEvent
	file    *os.File
}

// logStore keeps log streams in memory and appends every event to <dir>/<group>/<stream>.jsonl (names
// path-escaped), so streams survive restarts and stay readable with ordinary tools.
type logStore struct {
	dir    string
	mu     sync.Mutex
	groups map[string]map[string]*logStream
}

func openLogStore(dir string) (*logStore, error) {
	s := &logStore{dir: dir, groups: map[string]map[string]*logStream{}}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create log directory: %w", err)
	}
	groups, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read log directory: %w", err)
	}
	for _, g := range groups {
		group, err := url.PathUnescape(g.Name())
		if err != nil || !g.IsDir() {
			continue
		}
		files, _ := filepath.Glob(filepath.Join(dir, g.Name(), "*.jsonl"))
		for _, file := range files {
			stream, err := url.PathUnescape(strings.TrimSuffix(filepath.Base(file), ".jsonl"))
			if err != nil {
				continue
			}
			ls := &logStream{name: stream}
			f, err := os.Open(file)
			if err != nil {
				return nil, fmt.Errorf("read log stream: %w", err)
			}
			sc := bufio.NewScanner(f)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				var ev logEvent
				if json.Unmarshal(sc.Bytes(), &ev) == nil {
					ls.events = append(ls.events, ev)
				}
			}
			f.Close()
			if len(ls.events) > 0 {
				ls.created = ls.events[0].T
			}
			if s.groups[group] == nil {
				s.groups[group] = map[string]*logStream{}
			}
			s.groups[group][stream] = ls
		}
	}
	return s, nil
}

// append adds one event to a stream, creating group and stream as needed.
func (s *logStore) append(group, stream string, t time.Time, msg string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.groups[group]
	if g == nil {
		g = map[string]*logStream{}
		s.groups[group] = g
	}
	ls := g[stream]
	if ls == nil {
		ls = &logStream{name: stream, created: t.UnixMilli()}
		g[stream] = ls
	}
	ev := logEvent{T: t.UnixMilli(), M: msg}
	ls.events = append(ls.events, ev)
	if ls.file == nil {
		dir := filepath.Join(s.dir, url.PathEscape(group))
		if err := os.MkdirAll(dir, 0o755); err == nil {
			ls.file, _ = os.OpenFile(filepath.Join(dir, url.PathEscape(stream)+".jsonl"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		}
	}
	if ls.file != nil {
		b, _ := json.Marshal(ev)
		ls.file.Write(append(b, '\n'))
	}
}

func (s *logStore) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, g := range s.groups {
		for _, ls := range g {
			if ls.file != nil {
				ls.file.Close()
				ls.file = nil
			}
		}
	}
}

func logsNotFound(format string, args ...any) *apiError {
	return errorf("ResourceNotFoundException", http.StatusBadRequest, format, args...)
}

// groupRef names a log group as the Logs requests do: by name or by an ARN-style identifier.
type groupRef struct {
	LogGroupName       string `json:"logGroupName"`
	LogGroupIdentifier string `json:"logGroupIdentifier"`
}

// name is the log group's name.
func (r groupRef) name() string {
	if r.LogGroupName != "" {
		return r.LogGroupName
	}
	if i := strings.Index(r.LogGroupIdentifier, ":log-group:"); i >= 0 {
		return strings.TrimSuffix(r.LogGroupIdentifier[i+len(":log-group:"):], ":*")
	}
	return r.LogGroupIdentifier
}

// groupLocked returns the name and the streams of the group r names, or ResourceNotFoundException; s.mu
// must be held.
func (s *logStore) groupLocked(r groupRef) (string, map[string]*logStream, *apiError) {
	group := r.name()
	g, ok := s.groups[group]
	if !ok {
		return "", nil, logsNotFound("The specified log group does not exist.")
	}
	return group, g, nil
}

// logsOps are the CloudWatch Logs operations (awsJson1_1, X-Amz-Target Logs_20140328.<op>).
var logsOps = map[string]operation{
	"DescribeLogStreams": func(e *Emulator, dec decoder) (any, *apiError) { return e.logs.describeLogStreams(dec) },
	"GetLogEvents":       func(e *Emulator, dec decoder) (any, *apiError) { return e.logs.getLogEvents(dec) },
	"FilterLogEvents":    func(e *Emulator, dec decoder) (any, *apiError) { return e.logs.filterLogEvents(dec) },
}

func (s *logStore) describeLogStreams(dec decoder) (any, *apiError) {
	var in struct {
		groupRef
		LogStreamNamePrefix string `json:"logStreamNamePrefix"`
		OrderBy             string `json:"orderBy"`
		Descending          bool   `json:"descending"`
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	group, g, apiErr := s.groupLocked(in.groupRef)
	if apiErr != nil {
		return nil, apiErr
	}
	var streams []*logStream
	for name, ls := range g {
		if strings.HasPrefix(name, in.LogStreamNamePrefix) {
			streams = append(streams, ls)
		}
	}
	sort.Slice(streams, func(i, j int) bool {
		var less bool
		if in.OrderBy == "LastEventTime" {
			less = last(streams[i]) < last(streams[j])
		} else {
			less = streams[i].name < streams[j].name
		}
		if in.Descending {
			return !less
		}
		return less
	})
	out := make([]map[string]any, 0, len(streams))
	for _, ls := range streams {
		m := map[string]any{
			"logStreamName": ls.name,
			"creationTime":  ls.created,
			"arn":           arn("logs", "log-group:"+group+":log-stream:"+ls.name),
		}
		if len(ls.events) > 0 {
			m["firstEventTimestamp"] = ls.events[0].T
			m["lastEventTimestamp"] = last(ls)
			m["lastIngestionTime"] = last(ls)
		}
		out = append(out, m)
	}
	return map[string]any{"logStreams": out}, nil
}

func last(ls *logStream) int64 {
	if len(ls.events) == 0 {
		return 0
	}
	return ls.events[len(ls.events)-1].T
}

func (s *logStore) getLogEvents(dec decoder) (any, *apiError) {
	var in struct {
		groupRef
		LogStreamName string `json:"logStreamName"`
		StartTime     *int64 `json:"startTime"`
		EndTime       *int64 `json:"endTime"`
		Limit         int    `json:"limit"`
		StartFromHead bool   `json:"startFromHead"`
		NextToken     string `json:"nextToken"`
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, g, apiErr := s.groupLocked(in.groupRef)
	if apiErr != nil {
		return nil, apiErr
	}
	ls, ok := g[in.LogStreamName]
	if !ok {
		return nil, logsNotFound("The specified log stream does not exist.")
	}
	var evs []logEvent
	for _, ev := range ls.events {
		if (in.StartTime == nil || ev.T >= *in.StartTime) && (in.EndTime == nil || ev.T < *in.EndTime) {
			evs = append(evs, ev)
		}
	}
	limit := in.Limit
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	// Tokens are f/<index> and b/<index> into the filtered events: forward pages start at the index, backward
	// pages end before it.
	from, to := 0, len(evs)
	switch {
	case strings.HasPrefix(in.NextToken, "f/"):
		n, err := strconv.Atoi(in.NextToken[2:])
		if err != nil || n < 0 || n > len(evs) {
			return nil, errorf("InvalidParameterException", http.StatusBadRequest, "The specified nextToken is invalid.")
		}
		from, to = n, min(n+limit, len(evs))
	case strings.HasPrefix(in.NextToken, "b/"):
		n, err := strconv.Atoi(in.NextToken[2:])
		if err != nil || n < 0 || n > len(evs) {
			return nil, errorf("InvalidParameterException", http.StatusBadRequest, "The specified nextToken is invalid.")
		}
		from, to = max(0, n-limit), n
	case in.NextToken != "":
		return nil, errorf("InvalidParameterException", http.StatusBadRequest, "The specified nextToken is invalid.")
	case in.StartFromHead:
		to = min(limit, len(evs))
	default:
		from = max(0, len(evs)-limit)
	}
	out := make([]map[string]any, 0, to-from)
	for _, ev := range evs[from:to] {
		out = append(out, map[string]any{"timestamp": ev.T, "message": ev.M, "ingestionTime": ev.T})
	}
	return map[string]any{
		"events":            out,
		"nextForwardToken":  "f/" + strconv.Itoa(to),
		"nextBackwardToken": "b/" + strconv.Itoa(from),
	}, nil
}

func (s *logStore) filterLogEvents(dec decoder) (any, *apiError) {
	var in struct {
		groupRef
		LogStreamNames      []string `json:"logStreamNames"`
		LogStreamNamePrefix string   `json:"logStreamNamePrefix"`
		StartTime           *int64   `json:"startTime"`
		EndTime             *int64   `json:"endTime"`
		FilterPattern       string   `json:"filterPattern"`
		Limit               int      `json:"limit"`
		NextToken           string   `json:"nextToken"`
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if len(in.LogStreamNames) > 0 && in.LogStreamNamePrefix != "" {
		return nil, errorf("InvalidParameterException", http.StatusBadRequest, "You cannot specify both LogStreamNames and LogStreamNamePrefix.")
	}
	terms, err := parseFilterPattern(in.FilterPattern)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, g, apiErr := s.groupLocked(in.groupRef)
	if apiErr != nil {
		return nil, apiErr
	}
	type hit struct {
		stream string
		ev     logEvent
		idx    int
	}
	var hits []hit
	for name, ls := range g {
		if len(in.LogStreamNames) > 0 && !contains(in.LogStreamNames, name) {
			continue
		}
		if !strings.HasPrefix(name, in.LogStreamNamePrefix) {
			continue
		}
		for i, ev := range ls.events {
			if (in.StartTime != nil && ev.T < *in.StartTime) || (in.EndTime != nil && ev.T > *in.EndTime) {
				continue
			}
			if matchTerms(terms, ev.M) {
				hits = append(hits, hit{name, ev, i})
			}
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].ev.T != hits[j].ev.T {
			return hits[i].ev.T < hits[j].ev.T
		}
		if hits[i].stream != hits[j].stream {
			return hits[i].stream < hits[j].stream
		}
		return hits[i].idx < hits[j].idx
	})
	start := 0
	if in.NextToken != "" {
		n, err := strconv.Atoi(in.NextToken)
		if err != nil || n < 0 || n > len(hits) {
			return nil, errorf("InvalidParameterException", http.StatusBadRequest, "The specified nextToken is invalid.")
		}
		start = n
	}
	limit := in.Limit
	if limit <= 0 || limit > 10000 {
		limit = 10000
	}
	end := min(start+limit, len(hits))
	out := make([]map[string]any, 0, end-start)
	for _, h := range hits[start:end] {
		out = append(out, map[string]any{
			"logStreamName": h.stream, "timestamp": h.ev.T, "message": h.ev.M, "ingestionTime": h.ev.T,
			"eventId": fmt.Sprintf("%s/%d", h.stream, h.idx),
		})
	}
	resp := map[string]any{"events": out}
	if end < len(hits) {
		resp["nextToken"] = strconv.Itoa(end)
	}
	return resp, nil
}

// parseFilterPattern supports the term form of the CloudWatch Logs filter syntax: space-separated terms, each
// a bare word or a double-quoted phrase, all of which must occur in the message. JSON and space-delimited
// patterns are refused.
func parseFilterPattern(p string) ([]string, *apiError) {
	p = strings.TrimSpace(p)
	if strings.HasPrefix(p, "{") || strings.HasPrefix(p, "[") {
		return nil, errorf("InvalidParameterException", http.StatusBadRequest, "the emulator supports only term filter patterns (words and \"quoted phrases\"), not %q", p)
	}
	var terms []string
	for p != "" {
		if p[0] == '"' {
			end := strings.IndexByte(p[1:], '"')
			if end < 0 {
				return nil, errorf("InvalidParameterException", http.StatusBadRequest, "Invalid filter pattern: unterminated quote in %q", p)
			}
			terms = append(terms, p[1:1+end])
			p = strings.TrimSpace(p[end+2:])
			continue
		}
		word, rest, _ := strings.Cut(p, " ")
		terms = append(terms, word)
		p = strings.TrimSpace(rest)
	}
	return terms, nil
}

func matchTerms(terms []string, msg string) bool {
	for _, t := range terms {
		if !strings.Contains(msg, t) {
			return false
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
