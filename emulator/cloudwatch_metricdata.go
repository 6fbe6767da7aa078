// CloudWatch metric data: GetMetricData and GetMetricStatistics over the recorded datapoints.

package emulator

import (
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

type metricRef struct {
	Namespace  string
	MetricName string
	Dimensions []dimension
}

// metricDataQuery is one MetricDataQuery of GetMetricData.
type metricDataQuery struct {
	ID         string `json:"Id"`
	Label      string
	ReturnData *bool
	Expression string
	Period     int
	MetricStat *struct {
		Metric metricRef
		Period int
		Stat   string
		Unit   string
	}
}

// timeSeries is one query's result: timestamps ascending, one value each.
type timeSeries struct {
	ts []time.Time
	vs []float64
}

func (e *Emulator) getMetricData(dec decoder) (any, *apiError) {
	var in struct {
		MetricDataQueries []metricDataQuery
		StartTime         *epoch
		EndTime           *epoch
		ScanBy            string
		MaxDatapoints     *int
		NextToken         string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	switch {
	case in.StartTime == nil || in.EndTime == nil:
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameters StartTime and EndTime are required.")
	case !in.StartTime.Before(in.EndTime.Time):
		return nil, invalidParam("The parameter StartTime must be less than the parameter EndTime.")
	case len(in.MetricDataQueries) == 0:
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameter MetricDataQueries is required.")
	case len(in.MetricDataQueries) > maxMetricDataQueries:
		return nil, invalidParam("The collection MetricDataQueries must not have a size greater than %d.", maxMetricDataQueries)
	case in.MaxDatapoints != nil && *in.MaxDatapoints < 1:
		return nil, invalidParam("The parameter MaxDatapoints must be greater than 0.")
	}
	if err := checkEnum(in.ScanBy, "scanBy", scanByEnum); err != nil {
		return nil, err
	}
	offset := 0
	if pos, err := decodeToken(in.NextToken, metricDataTokenPrefix); err != nil {
		return nil, err
	} else if pos != "" {
		n, convErr := strconv.Atoi(pos)
		if convErr != nil || n < 0 {
			return nil, errorf("InvalidNextToken", http.StatusBadRequest, "The service returned an error: the NextToken %q is not valid.", in.NextToken)
		}
		offset = n
	}
	byID := map[string]*metricDataQuery{}
	for i := range in.MetricDataQueries {
		q := &in.MetricDataQueries[i]
		if err := checkMetricDataQuery(q, i+1); err != nil {
			return nil, err
		}
		if byID[q.ID] != nil {
			return nil, invalidParam("The value %s for parameter MetricDataQueries is not unique: every Id must be.", q.ID)
		}
		byID[q.ID] = q
	}
	now := time.Now()
	ev := &mathEval{e: e, queries: in.MetricDataQueries, byID: byID, start: in.StartTime.Time, end: in.EndTime.Time, now: now,
		done: map[string]timeSeries{}, busy: map[string]bool{}}
	type result struct {
		q  *metricDataQuery
		ts timeSeries
	}
	var results []result
	for i := range in.MetricDataQueries {
		q := &in.MetricDataQueries[i]
		ts, err := ev.series(q.ID)
		if err != nil {
			return nil, err
		}
		if q.ReturnData == nil || *q.ReturnData {
			results = append(results, result{q, ts})
		}
	}
	limit := defaultMaxDatapoints
	if in.MaxDatapoints != nil {
		limit = *in.MaxDatapoints
	}
	// Pages walk the returned datapoints in order, query after query; the token is the position reached.
	out := []map[string]any{}
	pos, taken := 0, 0
	for _, r := range results {
		idx := make([]int, len(r.ts.ts))
		for i := range idx {
			idx[i] = i
		}
		if in.ScanBy != "TimestampAscending" {
			slices.Reverse(idx)
		}
		ts, vs := []*epoch{}, []float64{}
		for _, i := range idx {
			if pos >= offset && taken < limit {
				ts = append(ts, newEpoch(r.ts.ts[i]))
				vs = append(vs, r.ts.vs[i])
				taken++
			}
			pos++
		}
		status := "Complete"
		if pos > offset+taken {
			status = "PartialData"
		}
		label := r.q.Label
		if label == "" {
			label = r.q.ID
			if r.q.MetricStat != nil {
				label = r.q.MetricStat.Metric.MetricName
			}
		}
		out = append(out, map[string]any{"Id": r.q.ID, "Label": label, "Timestamps": ts, "Values": vs, "StatusCode": status})
	}
	resp := map[string]any{"MetricDataResults": out, "Messages": []any{}}
	if offset+taken < pos {
		resp["NextToken"] = encodeToken(metricDataTokenPrefix, strconv.Itoa(offset+taken))
	}
	return resp, nil
}

// checkMetricDataQuery validates one query: an Id, exactly one of MetricStat and Expression, and a MetricStat's
// period, statistic and unit.
func checkMetricDataQuery(q *metricDataQuery, n int) *apiError {
	switch {
	case q.ID == "":
		return errorf("MissingParameter", http.StatusBadRequest, "The parameter MetricDataQueries.member.%d.Id is required.", n)
	case !metricDataID.MatchString(q.ID):
		return invalidParam("The value %s for parameter MetricDataQueries.member.%d.Id is not valid: it must start with a lowercase letter and hold only letters, numbers and underscores.", q.ID, n)
	case (q.MetricStat == nil) == (q.Expression == ""):
		return invalidParam("Exactly one of MetricStat and Expression must be given in MetricDataQueries.member.%d (Id %s).", n, q.ID)
	case q.MetricStat == nil:
		return nil
	}
	ms := q.MetricStat
	if err := checkPeriod(ms.Period, fmt.Sprintf("MetricDataQueries.member.%d.MetricStat.Period", n)); err != nil {
		return err
	}
	if err := checkEnum(ms.Unit, fmt.Sprintf("metricDataQueries.%d.member.metricStat.unit", n), standardUnitEnum); err != nil {
		return err
	}
	if _, ok := (agg{count: 1}).stat(ms.Stat); !ok {
		return invalidParam("The parameter MetricDataQueries.member.%d.MetricStat.Stat: the emulator supports the statistics %s and percentiles (p50, p95, p99.9), not %q.", n, strings.Join(basicStatistics, ", "), ms.Stat)
	}
	return nil
}

// metricDataID is the form of a MetricDataQuery Id: "The first character must be a lowercase letter."
var metricDataID = regexp.MustCompile(`^[a-z][a-zA-Z0-9_]*$`)

// mathEval computes the queries of one GetMetricData request: metrics from the store, expressions from the
// other queries' series.
type mathEval struct {
	e               *Emulator
	queries         []metricDataQuery
	byID            map[string]*metricDataQuery
	start, end, now time.Time
	done            map[string]timeSeries
	busy            map[string]bool
}

// series returns the series of the query with the given id, computing it (and what it references) once.
func (m *mathEval) series(id string) (timeSeries, *apiError) {
	if ts, ok := m.done[id]; ok {
		return ts, nil
	}
	q := m.byID[id]
	if q == nil {
		return timeSeries{}, invalidParam("Unrecognized metric id %s in an expression: no MetricDataQuery has that Id.", id)
	}
	if m.busy[id] {
		return timeSeries{}, invalidParam("The expression of %s refers to itself (a cycle through the other queries).", id)
	}
	m.busy[id] = true
	defer delete(m.busy, id)
	var ts timeSeries
	if q.MetricStat != nil {
		ms := q.MetricStat
		start := queryStart(m.start, m.now, ms.Period)
		var points []agg
		if ms.Unit == "" || ms.Unit == unitOf(ms.Metric.MetricName) {
			points = m.e.metrics.query(ms.Metric.Namespace, ms.Metric.MetricName, ms.Metric.Dimensions, retainedFrom(start, m.now, ms.Period),
				start, m.end, time.Duration(ms.Period)*time.Second)
		}
		for _, p := range points {
			v, _ := p.stat(ms.Stat)
			ts.ts = append(ts.ts, p.t)
			ts.vs = append(ts.vs, v)
		}
	} else {
		expr, err := parseExpression(q.Expression)
		if err != nil {
			return timeSeries{}, invalidParam("The expression %q of %s is not one the emulator evaluates (ids, numbers, + - * / and parentheses, SUM(METRICS())): %v.", q.Expression, q.ID, err)
		}
		v, apiErr := expr.eval(m)
		if apiErr != nil {
			return timeSeries{}, apiErr
		}
		if v.series == nil {
			return timeSeries{}, invalidParam("The expression %q of %s is a constant; an expression must refer to a metric.", q.Expression, q.ID)
		}
		ts = *v.series
	}
	m.done[id] = ts
	return ts, nil
}

func (e *Emulator) getMetricStatistics(dec decoder) (any, *apiError) {
	var in struct {
		Namespace          string
		MetricName         string
		Dimensions         []dimension
		StartTime          *epoch
		EndTime            *epoch
		Period             int
		Statistics         []string
		ExtendedStatistics []string
		Unit               string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	switch {
	case in.Namespace == "" || in.MetricName == "" || in.StartTime == nil || in.EndTime == nil:
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameters Namespace, MetricName, StartTime and EndTime are required.")
	case len(in.Statistics) == 0 && len(in.ExtendedStatistics) == 0:
		return nil, errorf("MissingParameter", http.StatusBadRequest, "At least one of the parameters Statistics and ExtendedStatistics must be specified.")
	case len(in.Statistics) > maxBasicStatistics:
		return nil, validationError(in.Statistics, "statistics", fmt.Sprintf("Member must have length less than or equal to %d", maxBasicStatistics))
	case len(in.ExtendedStatistics) > maxExtendedStatistics:
		return nil, validationError(in.ExtendedStatistics, "extendedStatistics", fmt.Sprintf("Member must have length less than or equal to %d", maxExtendedStatistics))
	case !in.StartTime.Before(in.EndTime.Time):
		return nil, invalidParam("The parameter StartTime must be less than the parameter EndTime.")
	}
	for i, s := range in.Statistics {
		if err := checkEnum(s, fmt.Sprintf("statistics.%d.member", i+1), basicStatistics); err != nil {
			return nil, err
		}
	}
	if err := checkEnum(in.Unit, "unit", standardUnitEnum); err != nil {
		return nil, err
	}
	if err := checkPeriod(in.Period, "Period"); err != nil {
		return nil, err
	}
	for _, s := range in.ExtendedStatistics {
		if !validPercentile(s) {
			return nil, invalidParam("The parameter ExtendedStatistics contains %q; use percentiles such as p50, p95 or p99.9.", s)
		}
	}
	now := time.Now()
	// The datapoints requested are counted over the whole range asked for, in seconds: a range of centuries is
	// more than a time.Duration holds.
	aligned := alignStart(in.StartTime.Time, now, in.Period)
	span := float64(in.EndTime.Unix()-aligned.Unix()) + float64(in.EndTime.Nanosecond()-aligned.Nanosecond())/1e9
	if n := math.Ceil(span / float64(in.Period)); n > float64(maxStatisticsDatapoints) {
		return nil, errorf("InvalidParameterCombination", http.StatusBadRequest,
			"You have requested up to %.0f datapoints, which exceeds the limit of %d. You may reduce the datapoints requested by increasing Period, or decreasing the time range.", n, maxStatisticsDatapoints)
	}
	start := queryStart(in.StartTime.Time, now, in.Period)
	period := time.Duration(in.Period) * time.Second
	var points []agg
	if in.Unit == "" || in.Unit == unitOf(in.MetricName) {
		points = e.metrics.query(in.Namespace, in.MetricName, in.Dimensions, retainedFrom(start, now, in.Period), start, in.EndTime.Time, period)
	}
	dps := make([]map[string]any, 0, len(points))
	for _, p := range points {
		dp := map[string]any{"Timestamp": newEpoch(p.t), "Unit": unitOf(in.MetricName)}
		for _, s := range in.Statistics {
			v, _ := p.stat(s)
			dp[s] = v
		}
		if len(in.ExtendedStatistics) > 0 {
			ext := map[string]float64{}
			for _, s := range in.ExtendedStatistics {
				ext[s], _ = p.stat(s)
			}
			dp["ExtendedStatistics"] = ext
		}
		dps = append(dps, dp)
	}
	return map[string]any{"Label": in.MetricName, "Datapoints": dps}, nil
}

func unitOf(metric string) string {
	if metric == metricModelLatency {
		return "Microseconds"
	}
	return "None"
}
