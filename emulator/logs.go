package emulator

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
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

// groupRef names a log group as the Logs requests do: by name or by an ARN-style identifier, exactly one of
// the two.
type groupRef struct {
	LogGroupName       *string `json:"logGroupName"`
	LogGroupIdentifier *string `json:"logGroupIdentifier"`
}

// name is the log group's name.
func (r groupRef) name() string {
	if r.LogGroupName != nil {
		return *r.LogGroupName
	}
	id := deref(r.LogGroupIdentifier)
	if i := strings.Index(id, ":log-group:"); i >= 0 {
		return strings.TrimSuffix(id[i+len(":log-group:"):], ":*")
	}
	return id
}

// validate checks the reference as botocore's model of the Logs API constrains it (LogGroupName: 1 to 512
// characters of [\.\-_/#A-Za-z0-9]; LogGroupIdentifier: 1 to 2048 of [\w#+=/:,.@-]) and as the API reference
// says: "You must include either logGroupIdentifier or logGroupName, but not both."
func (r groupRef) validate(v *logsValidation) {
	v.str("logGroupName", r.LogGroupName, 1, 512, logGroupNamePattern)
	v.str("logGroupIdentifier", r.LogGroupIdentifier, 1, 2048, logGroupIdentifierPattern)
	switch {
	case r.LogGroupName != nil && r.LogGroupIdentifier != nil:
		v.fail("LogGroupName and LogGroupIdentifier are mutually exclusive parameters: specify one of them, not both.")
	case r.LogGroupName == nil && r.LogGroupIdentifier == nil:
		v.fail("Either logGroupName or logGroupIdentifier must be specified.")
	}
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

// The patterns of botocore's Logs model, matched against the whole value.
var (
	logGroupNamePattern       = regexp.MustCompile(`^(?:[\.\-_/#A-Za-z0-9]+)$`)
	logGroupIdentifierPattern = regexp.MustCompile(`^(?:[\w#+=/:,.@-]*)$`)
	logStreamNamePattern      = regexp.MustCompile(`^(?:[^:*]*)$`)
)

// logsValidation collects what is wrong with a Logs request, worded as AWS words its validation errors
// ("1 validation error detected: Value '51' at 'limit' failed to satisfy constraint: Member must have value
// less than or equal to 50"), and answers them together as one InvalidParameterException, the only client
// error botocore's model lists for these operations.
type logsValidation struct {
	constraints []string // "Value ... at ... failed to satisfy constraint: ..."
	rules       []string // other refusals, whole sentences
}

func (v *logsValidation) constraint(field string, value any, rule string) {
	v.constraints = append(v.constraints, fmt.Sprintf("Value '%v' at '%s' failed to satisfy constraint: %s", value, field, rule))
}

func (v *logsValidation) fail(msg string) { v.rules = append(v.rules, msg) }

// str checks an optional string member: its length in characters and its pattern.
func (v *logsValidation) str(field string, p *string, minLen, maxLen int, pattern *regexp.Regexp) {
	if p == nil {
		return
	}
	n := utf8.RuneCountInString(*p)
	switch {
	case n < minLen:
		v.constraint(field, *p, fmt.Sprintf("Member must have length greater than or equal to %d", minLen))
	case n > maxLen:
		v.constraint(field, *p, fmt.Sprintf("Member must have length less than or equal to %d", maxLen))
	}
	if pattern != nil && !pattern.MatchString(*p) {
		v.constraint(field, *p, "Member must satisfy regular expression pattern: "+strings.TrimSuffix(strings.TrimPrefix(pattern.String(), "^(?:"), ")$"))
	}
}

// num checks an optional integer member against its bounds.
func (v *logsValidation) num(field string, p *int64, lo, hi int64) {
	if p == nil {
		return
	}
	switch {
	case *p < lo:
		v.constraint(field, *p, fmt.Sprintf("Member must have value greater than or equal to %d", lo))
	case *p > hi:
		v.constraint(field, *p, fmt.Sprintf("Member must have value less than or equal to %d", hi))
	}
}

// required checks that a required member is present.
func (v *logsValidation) required(field string, present bool) {
	if !present {
		v.constraint(field, "null", "Member must not be null")
	}
}

// err is the InvalidParameterException for everything collected, or nil.
func (v *logsValidation) err() *apiError {
	if len(v.constraints) == 0 && len(v.rules) == 0 {
		return nil
	}
	var parts []string
	if n := len(v.constraints); n > 0 {
		noun := "error"
		if n > 1 {
			noun = "errors"
		}
		parts = append(parts, fmt.Sprintf("%d validation %s detected: %s", n, noun, strings.Join(v.constraints, "; ")))
	}
	parts = append(parts, v.rules...)
	return invalidParameter("%s", strings.Join(parts, " "))
}

func invalidParameter(format string, args ...any) *apiError {
	return errorf("InvalidParameterException", http.StatusBadRequest, format, args...)
}

// errInvalidToken is CloudWatch Logs' answer to a nextToken it did not issue for the request.
func errInvalidToken() *apiError { return invalidParameter("The specified nextToken is invalid.") }

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
	"DescribeLogGroups":  func(e *Emulator, dec decoder) (any, *apiError) { return e.logs.describeLogGroups(dec) },
	"DescribeLogStreams": func(e *Emulator, dec decoder) (any, *apiError) { return e.logs.describeLogStreams(dec) },
	"GetLogEvents":       func(e *Emulator, dec decoder) (any, *apiError) { return e.logs.getLogEvents(dec) },
	"FilterLogEvents":    func(e *Emulator, dec decoder) (any, *apiError) { return e.logs.filterLogEvents(dec) },
}

// DescribeLogStreams paging: "By default, this operation returns up to 50 log streams. If there are more log
// streams to list, the response would contain a nextToken value in the response body." The model bounds
// limit to 1..50.
const describeLogStreamsLimit = 50

// Values of DescribeLogStreams' orderBy.
const (
	orderByName          = "LogStreamName"
	orderByLastEventTime = "LastEventTime"
)

// streamsToken is what a DescribeLogStreams nextToken carries: the request it continues (group, order,
// direction, prefix) and the last stream the previous page returned, so a page resumes after that stream
// even when streams were added meanwhile. A token for another request is refused.
type streamsToken struct {
	Group  string `json:"g"`
	Order  string `json:"o"`
	Desc   bool   `json:"d"`
	Prefix string `json:"p"`
	After  string `json:"a"`
	// AfterTime is the last stream's lastEventTimestamp when ordered by LastEventTime.
	AfterTime int64 `json:"t"`
}

func (t streamsToken) encode() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeStreamsToken(s string) (streamsToken, bool) {
	var t streamsToken
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil || json.Unmarshal(b, &t) != nil || t.After == "" {
		return streamsToken{}, false
	}
	return t, true
}

func (s *logStore) describeLogStreams(dec decoder) (any, *apiError) {
	var in struct {
		groupRef
		LogStreamNamePrefix *string `json:"logStreamNamePrefix"`
		OrderBy             *string `json:"orderBy"`
		Descending          bool    `json:"descending"`
		NextToken           *string `json:"nextToken"`
		Limit               *int64  `json:"limit"`
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	var v logsValidation
	in.groupRef.validate(&v)
	v.str("logStreamNamePrefix", in.LogStreamNamePrefix, 1, 512, logStreamNamePattern)
	if in.OrderBy != nil && *in.OrderBy != orderByName && *in.OrderBy != orderByLastEventTime {
		v.constraint("orderBy", *in.OrderBy, "Member must satisfy enum value set: [LogStreamName, LastEventTime]")
	}
	v.str("nextToken", in.NextToken, 1, math.MaxInt, nil)
	v.num("limit", in.Limit, 1, describeLogStreamsLimit)
	order := deref(in.OrderBy)
	if order == "" {
		order = orderByName
	}
	prefix := deref(in.LogStreamNamePrefix)
	if order == orderByLastEventTime && in.LogStreamNamePrefix != nil {
		// API reference, orderBy: "If you order the results by event time, you cannot specify the
		// logStreamNamePrefix parameter."
		v.fail("Cannot order by LastEventTime with a logStreamNamePrefix.")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	limit := int(describeLogStreamsLimit)
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	group, g, apiErr := s.groupLocked(in.groupRef)
	if apiErr != nil {
		return nil, apiErr
	}
	var streams []*logStream
	for name, ls := range g {
		if strings.HasPrefix(name, prefix) {
			streams = append(streams, ls)
		}
	}
	// before reports whether a stream (name, time) comes before b in the requested order.
	before := func(aName string, aTime int64, b *logStream) bool {
		less, greater := aName < b.name, aName > b.name
		if order == orderByLastEventTime && aTime != last(b) {
			less, greater = aTime < last(b), aTime > last(b)
		}
		if in.Descending {
			return greater
		}
		return less
	}
	sort.Slice(streams, func(i, j int) bool { return before(streams[i].name, last(streams[i]), streams[j]) })
	from := 0
	if in.NextToken != nil {
		t, ok := decodeStreamsToken(*in.NextToken)
		if !ok || t.Group != group || t.Order != order || t.Desc != in.Descending || t.Prefix != prefix {
			return nil, errInvalidToken()
		}
		// Resume after the last stream of the previous page: at the first stream that comes after it.
		from = sort.Search(len(streams), func(i int) bool { return before(t.After, t.AfterTime, streams[i]) })
	}
	to := min(from+limit, len(streams))
	out := make([]map[string]any, 0, to-from)
	for _, ls := range streams[from:to] {
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
	resp := map[string]any{"logStreams": out}
	if to < len(streams) {
		lastOut := streams[to-1]
		resp["nextToken"] = streamsToken{Group: group, Order: order, Desc: in.Descending, Prefix: prefix, After: lastOut.name, AfterTime: last(lastOut)}.encode()
	}
	return resp, nil
}

// describeLogGroupsLimit is DescribeLogGroups' page: "If you don't specify a value, the default is up to 50
// items." (limit, DescribeLimit: 1..50).
const describeLogGroupsLimit = 50

// groupsToken is what a DescribeLogGroups nextToken carries: the filter of the request it continues and the
// last group the previous page returned.
type groupsToken struct {
	Prefix  string `json:"p"`
	Pattern string `json:"s"`
	Class   string `json:"c"`
	After   string `json:"a"`
}

// describeLogGroups serves DescribeLogGroups: the log groups the endpoints' instances wrote to, "ASCII-sorted
// by log group name", filtered by logGroupNamePrefix, logGroupNamePattern (a case-sensitive substring) or
// logGroupIdentifiers, in pages of limit (default 50) with a nextToken, as DescribeLogStreams pages. Every
// group is of class STANDARD; a group's creationTime is its first stream's.
func (s *logStore) describeLogGroups(dec decoder) (any, *apiError) {
	var in struct {
		LogGroupNamePrefix  *string  `json:"logGroupNamePrefix"`
		LogGroupNamePattern *string  `json:"logGroupNamePattern"`
		NextToken           *string  `json:"nextToken"`
		Limit               *int64   `json:"limit"`
		LogGroupClass       *string  `json:"logGroupClass"`
		LogGroupIdentifiers []string `json:"logGroupIdentifiers"`
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	var v logsValidation
	if in.LogGroupNamePrefix != nil && in.LogGroupNamePattern != nil {
		// logGroupNamePrefix: "logGroupNamePrefix and logGroupNamePattern are mutually exclusive. Only one of
		// these parameters can be passed."
		v.fail("LogGroupNamePrefix and LogGroupNamePattern are mutually exclusive.")
	}
	if len(in.LogGroupIdentifiers) > 0 && (in.LogGroupNamePrefix != nil || in.LogGroupNamePattern != nil) {
		// logGroupIdentifiers: "If you specify this parameter, the only other filter that you can choose to
		// specify is includeLinkedAccounts."
		v.fail("LogGroupIdentifiers cannot be combined with LogGroupNamePrefix or LogGroupNamePattern.")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	limit := int(describeLogGroupsLimit)
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	tok := groupsToken{Prefix: deref(in.LogGroupNamePrefix), Pattern: deref(in.LogGroupNamePattern), Class: deref(in.LogGroupClass)}
	s.mu.Lock()
	defer s.mu.Unlock()
	var names []string
	for name := range s.groups {
		switch {
		case !strings.HasPrefix(name, tok.Prefix), !strings.Contains(name, tok.Pattern):
		case tok.Class != "" && tok.Class != "STANDARD":
		case len(in.LogGroupIdentifiers) > 0 && !slices.ContainsFunc(in.LogGroupIdentifiers, func(id string) bool {
			return id == name || id == arn("logs", "log-group:"+name)
		}):
		default:
			names = append(names, name)
		}
	}
	sort.Strings(names)
	from := 0
	if in.NextToken != nil {
		var t groupsToken
		b, err := base64.RawURLEncoding.DecodeString(*in.NextToken)
		if err != nil || json.Unmarshal(b, &t) != nil || t.After == "" || t.Prefix != tok.Prefix || t.Pattern != tok.Pattern || t.Class != tok.Class {
			return nil, errInvalidToken()
		}
		from = sort.SearchStrings(names, t.After)
		if from < len(names) && names[from] == t.After {
			from++
		}
	}
	to := min(from+limit, len(names))
	out := make([]map[string]any, 0, to-from)
	for _, name := range names[from:to] {
		created := int64(0)
		for _, ls := range s.groups[name] {
			if created == 0 || ls.created < created {
				created = ls.created
			}
		}
		groupArn := arn("logs", "log-group:"+name)
		out = append(out, map[string]any{
			"logGroupName": name, "creationTime": created, "metricFilterCount": 0, "storedBytes": 0,
			"arn": groupArn + ":*", "logGroupArn": groupArn, "logGroupClass": "STANDARD",
		})
	}
	resp := map[string]any{"logGroups": out}
	if to < len(names) {
		tok.After = names[to-1]
		b, _ := json.Marshal(tok)
		resp["nextToken"] = base64.RawURLEncoding.EncodeToString(b)
	}
	return resp, nil
}

func last(ls *logStream) int64 {
	if len(ls.events) == 0 {
		return 0
	}
	return ls.events[len(ls.events)-1].T
}

// eventsLimit bounds GetLogEvents and FilterLogEvents pages: "Each page returned can contain up to 1 MB of log
// events or up to 10,000 log events." The model bounds limit to 1..10000.
const eventsLimit = 10000

// getLogEvents serves GetLogEvents. Its tokens are f/<index> and b/<index> into the stream's events in the
// time range: a forward page starts at the index, a backward page ends before it. At either end the token
// returned equals the one passed, which is how the API reference says pagination ends: "As long as the
// nextBackwardToken or nextForwardToken returned is NOT equal to the nextToken that you passed into the API
// call, there might be more log events available."
func (s *logStore) getLogEvents(dec decoder) (any, *apiError) {
	var in struct {
		groupRef
		LogStreamName *string `json:"logStreamName"`
		StartTime     *int64  `json:"startTime"`
		EndTime       *int64  `json:"endTime"`
		Limit         *int64  `json:"limit"`
		StartFromHead bool    `json:"startFromHead"`
		NextToken     *string `json:"nextToken"`
		Unmask        bool    `json:"unmask"`
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	var v logsValidation
	in.groupRef.validate(&v)
	v.required("logStreamName", in.LogStreamName != nil)
	v.str("logStreamName", in.LogStreamName, 1, 512, logStreamNamePattern)
	v.num("startTime", in.StartTime, 0, math.MaxInt64)
	v.num("endTime", in.EndTime, 0, math.MaxInt64)
	v.num("limit", in.Limit, 1, eventsLimit)
	v.str("nextToken", in.NextToken, 1, math.MaxInt, nil)
	if err := v.err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, g, apiErr := s.groupLocked(in.groupRef)
	if apiErr != nil {
		return nil, apiErr
	}
	ls, ok := g[*in.LogStreamName]
	if !ok {
		return nil, logsNotFound("The specified log stream does not exist.")
	}
	var evs []logEvent
	for _, ev := range ls.events {
		if (in.StartTime == nil || ev.T >= *in.StartTime) && (in.EndTime == nil || ev.T < *in.EndTime) {
			evs = append(evs, ev)
		}
	}
	limit := eventsLimit
	if in.Limit != nil {
		limit = int(*in.Limit)
	}
	from, to := 0, len(evs)
	token := deref(in.NextToken)
	switch {
	case strings.HasPrefix(token, "f/"):
		n, ok := tokenIndex(token[2:], len(evs))
		if !ok {
			return nil, errInvalidToken()
		}
		from, to = n, min(n+limit, len(evs))
	case strings.HasPrefix(token, "b/"):
		n, ok := tokenIndex(token[2:], len(evs))
		if !ok {
			return nil, errInvalidToken()
		}
		from, to = max(0, n-limit), n
	case token != "":
		return nil, errInvalidToken()
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

// tokenIndex parses the index of a token: a decimal number from 0 to n written as strconv.Itoa writes it, so
// one position has exactly one token.
func tokenIndex(s string, n int) (int, bool) {
	i, err := strconv.Atoi(s)
	if err != nil || i < 0 || i > n || strconv.Itoa(i) != s {
		return 0, false
	}
	return i, true
}

// filterLogEvents serves FilterLogEvents. Its nextToken is the index of the next matching event, returned only
// while more remain: "If the results don't include a nextToken, then pagination is finished."
func (s *logStore) filterLogEvents(dec decoder) (any, *apiError) {
	var in struct {
		groupRef
		LogStreamNames      []string `json:"logStreamNames"`
		LogStreamNamePrefix *string  `json:"logStreamNamePrefix"`
		StartTime           *int64   `json:"startTime"`
		EndTime             *int64   `json:"endTime"`
		FilterPattern       *string  `json:"filterPattern"`
		Limit               *int64   `json:"limit"`
		NextToken           *string  `json:"nextToken"`
		Interleaved         bool     `json:"interleaved"`
		Unmask              bool     `json:"unmask"`
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	var v logsValidation
	in.groupRef.validate(&v)
	if in.LogStreamNames != nil {
		switch n := len(in.LogStreamNames); {
		case n < 1:
			v.constraint("logStreamNames", "[]", "Member must have length greater than or equal to 1")
		case n > 100:
			v.constraint("logStreamNames", fmt.Sprint(in.LogStreamNames), "Member must have length less than or equal to 100")
		}
		for i := range in.LogStreamNames {
			v.str(fmt.Sprintf("logStreamNames.%d.member", i+1), &in.LogStreamNames[i], 1, 512, logStreamNamePattern)
		}
	}
	v.str("logStreamNamePrefix", in.LogStreamNamePrefix, 1, 512, logStreamNamePattern)
	v.num("startTime", in.StartTime, 0, math.MaxInt64)
	v.num("endTime", in.EndTime, 0, math.MaxInt64)
	v.str("filterPattern", in.FilterPattern, 0, 1024, nil)
	v.num("limit", in.Limit, 1, eventsLimit)
	v.str("nextToken", in.NextToken, 1, math.MaxInt, nil)
	if len(in.LogStreamNames) > 0 && in.LogStreamNamePrefix != nil {
		// API reference, logStreamNames: "If you specify a value for both logStreamNames and
		// logStreamNamePrefix, the action returns an InvalidParameterException error."
		v.fail("You cannot specify both LogStreamNames and LogStreamNamePrefix.")
	}
	if err := v.err(); err != nil {
		return nil, err
	}
	terms, err := parseFilterPattern(deref(in.FilterPattern))
	if err != nil {
		return nil, err
	}
	prefix := deref(in.LogStreamNamePrefix)
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
		if !strings.HasPrefix(name, prefix) {
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
	if in.NextToken != nil {
		n, ok := tokenIndex(*in.NextToken, len(hits))
		if !ok {
			return nil, errInvalidToken()
		}
		start = n
	}
	limit := eventsLimit
	if in.Limit != nil {
		limit = int(*in.Limit)
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
