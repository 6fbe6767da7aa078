package emulator

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"
)

// CloudWatch alarm states.
const (
	alarmOK           = "OK"
	alarmAlarm        = "ALARM"
	alarmInsufficient = "INSUFFICIENT_DATA"
)

var comparisonOperators = []string{"GreaterThanOrEqualToThreshold", "GreaterThanThreshold", "LessThanThreshold", "LessThanOrEqualToThreshold"}

var basicStatistics = []string{"SampleCount", "Average", "Sum", "Minimum", "Maximum"}

func invalidParam(format string, args ...any) *apiError {
	return errorf("InvalidParameterValue", http.StatusBadRequest, format, args...)
}

// cloudwatchOps are the CloudWatch operations, served over rpcv2Cbor
// (/service/GraniteServiceVersion20100801/operation/<op>) and awsJson1_0 (X-Amz-Target
// GraniteServiceVersion20100801.<op>).
var cloudwatchOps = map[string]operation{
	"PutMetricAlarm":      (*Emulator).putMetricAlarm,
	"DescribeAlarms":      (*Emulator).describeAlarms,
	"DeleteAlarms":        (*Emulator).deleteAlarms,
	"GetMetricData":       (*Emulator).getMetricData,
	"GetMetricStatistics": (*Emulator).getMetricStatistics,
}

type putMetricAlarmInput struct {
	AlarmName               string
	AlarmDescription        string
	ActionsEnabled          *bool
	AlarmActions            []string
	OKActions               []string
	InsufficientDataActions []string
	MetricName              string
	Namespace               string
	Statistic               string
	ExtendedStatistic       string
	Dimensions              []dimension
	Period                  int
	Unit                    string
	EvaluationPeriods       int
	DatapointsToAlarm       int
	Threshold               *float64
	ComparisonOperator      string
	TreatMissingData        string
	Metrics                 []any
}

func (e *Emulator) putMetricAlarm(dec decoder) (any, *apiError) {
	var in putMetricAlarmInput
	if err := dec(&in); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.putAlarmLocked(in); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// putAlarmLocked validates and stores an alarm, keeping its state when only its configuration changes; e.mu
// must be held.
func (e *Emulator) putAlarmLocked(in putMetricAlarmInput) (*alarmRec, *apiError) {
	switch {
	case in.AlarmName == "":
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameter AlarmName is required.")
	case len(in.Metrics) > 0:
		return nil, invalidParam("the emulator does not support metric math alarms (Metrics); give MetricName and Namespace")
	case in.MetricName == "" || in.Namespace == "":
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameters MetricName and Namespace are required.")
	case in.ExtendedStatistic != "" && in.Statistic != "":
		return nil, errorf("InvalidParameterCombination", http.StatusBadRequest, "Exactly one of the parameters Statistic and ExtendedStatistic must be specified, not both.")
	case in.ExtendedStatistic != "" && !validPercentile(in.ExtendedStatistic):
		return nil, invalidParam("The parameter ExtendedStatistic %q is not a percentile between p0 and p100 (e.g. p95, p99.9).", in.ExtendedStatistic)
	case in.ExtendedStatistic == "" && !contains(basicStatistics, in.Statistic):
		return nil, invalidParam("The parameter Statistic must be one of %s (or give ExtendedStatistic, e.g. p95).", strings.Join(basicStatistics, ", "))
	case in.Period < 1:
		return nil, invalidParam("The parameter Period must be at least 1.")
	case in.EvaluationPeriods < 1:
		return nil, invalidParam("The parameter EvaluationPeriods must be at least 1.")
	case in.DatapointsToAlarm > in.EvaluationPeriods:
		return nil, invalidParam("DatapointsToAlarm must be less than or equal to EvaluationPeriods.")
	case in.Threshold == nil:
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameter Threshold is required.")
	case !contains(comparisonOperators, in.ComparisonOperator):
		return nil, invalidParam("The parameter ComparisonOperator must be one of %s.", strings.Join(comparisonOperators, ", "))
	}
	switch in.TreatMissingData {
	case "", "missing", "breaching", "notBreaching", "ignore":
	default:
		return nil, invalidParam("The parameter TreatMissingData must be one of breaching, notBreaching, ignore, missing.")
	}
	now := time.Now().UTC()
	a := e.st.Alarms[in.AlarmName]
	if a == nil {
		a = &alarmRec{Name: in.AlarmName, Arn: arn("cloudwatch", "alarm:"+in.AlarmName), State: alarmInsufficient,
			StateReason: "Unchecked: Initial alarm creation", StateUpdated: now}
		e.st.Alarms[in.AlarmName] = a
	}
	a.Description = in.AlarmDescription
	a.ActionsEnabled = in.ActionsEnabled == nil || *in.ActionsEnabled
	a.AlarmActions, a.OKActions, a.InsufficientData = in.AlarmActions, in.OKActions, in.InsufficientDataActions
	a.Namespace, a.MetricName, a.Dimensions = in.Namespace, in.MetricName, in.Dimensions
	a.Statistic, a.ExtendedStatistic, a.Unit, a.Period = in.Statistic, in.ExtendedStatistic, in.Unit, in.Period
	a.EvaluationPeriods, a.DatapointsToAlarm = in.EvaluationPeriods, in.DatapointsToAlarm
	a.Threshold, a.ComparisonOperator, a.TreatMissingData = *in.Threshold, in.ComparisonOperator, in.TreatMissingData
	a.ConfigUpdated = now
	e.saveLocked()
	return a, nil
}

func alarmView(a *alarmRec) map[string]any {
	m := map[string]any{
		"AlarmName":                          a.Name,
		"AlarmArn":                           a.Arn,
		"ActionsEnabled":                     a.ActionsEnabled,
		"AlarmActions":                       nonNil(a.AlarmActions),
		"OKActions":                          nonNil(a.OKActions),
		"InsufficientDataActions":            nonNil(a.InsufficientData),
		"StateValue":                         a.State,
		"StateReason":                        a.StateReason,
		"StateUpdatedTimestamp":              newEpoch(a.StateUpdated),
		"StateTransitionedTimestamp":         newEpoch(a.StateUpdated),
		"AlarmConfigurationUpdatedTimestamp": newEpoch(a.ConfigUpdated),
		"MetricName":                         a.MetricName,
		"Namespace":                          a.Namespace,
		"Dimensions":                         nonNilDims(a.Dimensions),
		"Period":                             a.Period,
		"EvaluationPeriods":                  a.EvaluationPeriods,
		"Threshold":                          a.Threshold,
		"ComparisonOperator":                 a.ComparisonOperator,
	}
	if a.ExtendedStatistic != "" {
		m["ExtendedStatistic"] = a.ExtendedStatistic
	} else {
		m["Statistic"] = a.Statistic
	}
	if a.Description != "" {
		m["AlarmDescription"] = a.Description
	}
	if a.DatapointsToAlarm > 0 {
		m["DatapointsToAlarm"] = a.DatapointsToAlarm
	}
	if a.TreatMissingData != "" {
		m["TreatMissingData"] = a.TreatMissingData
	}
	if a.Unit != "" {
		m["Unit"] = a.Unit
	}
	return m
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func nonNilDims(s []dimension) []dimension {
	if s == nil {
		return []dimension{}
	}
	return s
}

func (e *Emulator) describeAlarms(dec decoder) (any, *apiError) {
	var in struct {
		AlarmNames      []string
		AlarmNamePrefix string
		StateValue      string
		ActionPrefix    string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if len(in.AlarmNames) > 0 && in.AlarmNamePrefix != "" {
		return nil, errorf("InvalidParameterCombination", http.StatusBadRequest, "AlarmNames and AlarmNamePrefix cannot be used together.")
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.st.Alarms))
	for n := range e.st.Alarms {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []map[string]any{}
	for _, n := range names {
		a := e.st.Alarms[n]
		if len(in.AlarmNames) > 0 && !contains(in.AlarmNames, n) {
			continue
		}
		if !strings.HasPrefix(n, in.AlarmNamePrefix) {
			continue
		}
		if in.StateValue != "" && a.State != in.StateValue {
			continue
		}
		if in.ActionPrefix != "" && !hasPrefixed(a.AlarmActions, in.ActionPrefix) {
			continue
		}
		out = append(out, alarmView(a))
	}
	return map[string]any{"MetricAlarms": out, "CompositeAlarms": []any{}}, nil
}

func hasPrefixed(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func (e *Emulator) deleteAlarms(dec decoder) (any, *apiError) {
	var in struct{ AlarmNames []string }
	if err := dec(&in); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	var missing []string
	for _, n := range in.AlarmNames {
		if _, ok := e.st.Alarms[n]; !ok {
			missing = append(missing, n)
		}
	}
	if len(missing) > 0 {
		return nil, errorf("ResourceNotFound", http.StatusNotFound, "Alarm(s) not found: %s", strings.Join(missing, ", "))
	}
	for _, n := range in.AlarmNames {
		delete(e.st.Alarms, n)
	}
	e.saveLocked()
	return map[string]any{}, nil
}

type metricRef struct {
	Namespace  string
	MetricName string
	Dimensions []dimension
}

func (e *Emulator) getMetricData(dec decoder) (any, *apiError) {
	var in struct {
		MetricDataQueries []struct {
			ID         string `json:"Id"`
			Label      string
			ReturnData *bool
			Expression string
			MetricStat *struct {
				Metric metricRef
				Period int
				Stat   string
				Unit   string
			}
		}
		StartTime *epoch
		EndTime   *epoch
		ScanBy    string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if in.StartTime == nil || in.EndTime == nil {
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameters StartTime and EndTime are required.")
	}
	if !in.StartTime.Before(in.EndTime.Time) {
		return nil, invalidParam("The parameter StartTime must be less than the parameter EndTime.")
	}
	results := []map[string]any{}
	for _, q := range in.MetricDataQueries {
		if q.Expression != "" || q.MetricStat == nil {
			return nil, invalidParam("query %s: the emulator supports only MetricStat queries, not expressions", q.ID)
		}
		if q.MetricStat.Period < 1 {
			return nil, invalidParam("query %s: the parameter Period must be at least 1", q.ID)
		}
		if _, ok := (agg{count: 1}).stat(q.MetricStat.Stat); !ok {
			return nil, invalidParam("query %s: the emulator supports the statistics %s and percentiles (p50, p95, p99.9), not %q", q.ID, strings.Join(basicStatistics, ", "), q.MetricStat.Stat)
		}
		if q.ReturnData != nil && !*q.ReturnData {
			continue
		}
		m := q.MetricStat.Metric
		points := e.metrics.query(m.Namespace, m.MetricName, m.Dimensions, in.StartTime.Time, in.EndTime.Time, time.Duration(q.MetricStat.Period)*time.Second)
		if in.ScanBy != "TimestampAscending" {
			for i, j := 0, len(points)-1; i < j; i, j = i+1, j-1 {
				points[i], points[j] = points[j], points[i]
			}
		}
		ts := make([]*epoch, 0, len(points))
		vs := make([]float64, 0, len(points))
		for _, p := range points {
			v, _ := p.stat(q.MetricStat.Stat)
			ts = append(ts, newEpoch(p.t))
			vs = append(vs, v)
		}
		label := q.Label
		if label == "" {
			label = m.MetricName
		}
		results = append(results, map[string]any{"Id": q.ID, "Label": label, "Timestamps": ts, "Values": vs, "StatusCode": "Complete"})
	}
	return map[string]any{"MetricDataResults": results, "Messages": []any{}}, nil
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
	case in.Period < 1:
		return nil, invalidParam("The parameter Period must be at least 1.")
	case len(in.Statistics) == 0 && len(in.ExtendedStatistics) == 0:
		return nil, errorf("MissingParameter", http.StatusBadRequest, "At least one of the parameters Statistics and ExtendedStatistics must be specified.")
	}
	for _, s := range in.Statistics {
		if !contains(basicStatistics, s) {
			return nil, invalidParam("The parameter Statistics contains %q; use %s.", s, strings.Join(basicStatistics, ", "))
		}
	}
	for _, s := range in.ExtendedStatistics {
		if !validPercentile(s) {
			return nil, invalidParam("The parameter ExtendedStatistics contains %q; use percentiles such as p50, p95 or p99.9.", s)
		}
	}
	points := e.metrics.query(in.Namespace, in.MetricName, in.Dimensions, in.StartTime.Time, in.EndTime.Time, time.Duration(in.Period)*time.Second)
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

// evaluateAlarmLocked computes an alarm's state from its last EvaluationPeriods complete periods, as CloudWatch
// does, and records the newest value; e.mu must be held. It reports whether the state changed.
func (e *Emulator) evaluateAlarmLocked(a *alarmRec, now time.Time) bool {
	period := time.Duration(a.Period) * time.Second
	if period < e.opts.MetricPeriod {
		period = e.opts.MetricPeriod
	}
	end := now.Truncate(period)
	start := end.Add(-time.Duration(a.EvaluationPeriods) * period)
	points := e.metrics.query(a.Namespace, a.MetricName, a.Dimensions, start, end, period)
	need := a.DatapointsToAlarm
	if need <= 0 {
		need = a.EvaluationPeriods
	}
	var values []float64
	for _, p := range points {
		v, _ := p.stat(a.statistic())
		values = append(values, v)
	}
	missing := a.EvaluationPeriods - len(values)
	breaching := 0
	for _, v := range values {
		if breaches(a.ComparisonOperator, v, a.Threshold) {
			breaching++
		}
	}
	if len(values) > 0 {
		a.LastValue = values[len(values)-1]
	}
	var next, reason string
	switch {
	case a.TreatMissingData == "breaching":
		breaching += missing
	case len(values) == 0 && a.TreatMissingData == "ignore":
		return false
	case len(values) == 0 && a.TreatMissingData != "notBreaching":
		next, reason = alarmInsufficient, fmt.Sprintf("Insufficient Data: no datapoints were received for %d periods.", a.EvaluationPeriods)
	}
	if next == "" {
		if breaching >= need {
			next = alarmAlarm
		} else {
			next = alarmOK
		}
		reason = fmt.Sprintf("Threshold Crossed: %d out of the last %d datapoints %v were %s the threshold (%g).",
			breaching, a.EvaluationPeriods, values, operatorWords(a.ComparisonOperator, next == alarmAlarm), a.Threshold)
	}
	if next == a.State {
		return false
	}
	a.State, a.StateReason, a.StateUpdated = next, reason, now.UTC()
	return true
}

// validPercentile reports whether name is a percentile statistic (p0 to p100, e.g. p95 or p99.9).
func validPercentile(name string) bool {
	_, ok := parsePercentile(name)
	return ok
}

// statistic is the statistic an alarm evaluates: its ExtendedStatistic when set, else its Statistic.
func (a *alarmRec) statistic() string {
	if a.ExtendedStatistic != "" {
		return a.ExtendedStatistic
	}
	return a.Statistic
}

func breaches(op string, v, threshold float64) bool {
	switch op {
	case "GreaterThanThreshold":
		return v > threshold
	case "GreaterThanOrEqualToThreshold":
		return v >= threshold
	case "LessThanThreshold":
		return v < threshold
	case "LessThanOrEqualToThreshold":
		return v <= threshold
	}
	return false
}

func operatorWords(op string, breached bool) string {
	words := map[string]string{
		"GreaterThanThreshold":          "greater than",
		"GreaterThanOrEqualToThreshold": "greater than or equal to",
		"LessThanThreshold":             "less than",
		"LessThanOrEqualToThreshold":    "less than or equal to",
	}[op]
	if breached {
		return words
	}
	return "not " + words
}
