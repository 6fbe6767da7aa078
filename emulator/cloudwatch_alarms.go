// CloudWatch alarms: PutMetricAlarm, DescribeAlarms, DeleteAlarms and their evaluation.

package emulator

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

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
	if err := e.checkAlarmPeriods(in); err != nil {
		return nil, err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, err := e.putAlarmLocked(in); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// checkAlarmPeriods refuses an alarm whose periods PutMetricAlarm does not accept, with CloudWatch's
// ValidationError: a Period outside its valid values, or a total evaluation period (Period × EvaluationPeriods)
// longer than its limits. A Period or EvaluationPeriods that is missing or under 1 is left to putAlarmLocked's
// checks (the service model refuses one under 1 before).
func (e *Emulator) checkAlarmPeriods(in putMetricAlarmInput) *apiError {
	if in.Period < 1 || in.EvaluationPeriods < 1 {
		return nil
	}
	// Both are at most 2^31 - 1 (the model's integer type), so their product fits an int64.
	total := int64(in.Period) * int64(in.EvaluationPeriods)
	switch {
	case total > maxAlarmEvaluationS:
		return errorf("ValidationError", http.StatusBadRequest,
			"The total evaluation period of an alarm can be no longer than seven days: Period (%d) multiplied by EvaluationPeriods (%d) is %d seconds, more than %d.",
			in.Period, in.EvaluationPeriods, total, maxAlarmEvaluationS)
	case in.Period < shortAlarmPeriodS && total > maxShortAlarmEvaluationS:
		return errorf("ValidationError", http.StatusBadRequest,
			"The total evaluation period of an alarm with a Period of less than %d seconds can be no longer than one day: Period (%d) multiplied by EvaluationPeriods (%d) is %d seconds, more than %d.",
			shortAlarmPeriodS, in.Period, in.EvaluationPeriods, total, maxShortAlarmEvaluationS)
	case !e.alarmPeriodValid(in.Period):
		// CloudWatch's answer to Period 1, as CloudFormation relayed it (awsdocs/aws-cloudformation-user-guide#777):
		// "Period must be 10, 30 or a multiple of 60 (Service: AmazonCloudWatch; Status Code: 400; Error Code:
		// ValidationError ...)"; 20 has been valid since.
		return errorf("ValidationError", http.StatusBadRequest, "Period must be 10, 20, 30 or a multiple of 60%s, not %d.", e.shortenedPeriodsNote(), in.Period)
	}
	return nil
}

// awsAlarmPeriod reports whether PutMetricAlarm accepts the period p, in seconds: "Valid values are 10, 20, 30,
// and any multiple of 60."
func awsAlarmPeriod(p int) bool { return p%60 == 0 || slices.Contains(alarmSubMinutePeriods, p) }

// alarmPeriodValid reports whether the emulator accepts the alarm period p, in seconds (at most
// maxAlarmEvaluationS): AWS's valid values and, when the emulator's metric period is shorter than SageMaker's 10
// s (the tests' 1 s, or `--metric-period`), the same values shortened by its factor (metric period / 10 s) where
// they come out whole: with a 1-s metric period 1, 2, 3 and the multiples of 6 stand for 10, 20, 30 and the
// multiples of 60, so the emulator's compressed alarms keep AWS's grid. At the default 10 s the set is AWS's.
func (e *Emulator) alarmPeriodValid(p int) bool {
	if awsAlarmPeriod(p) {
		return true
	}
	mp := e.opts.MetricPeriod
	if mp >= DefaultMetricPeriod {
		return false
	}
	stretched := time.Duration(p) * DefaultMetricPeriod
	return stretched%mp == 0 && awsAlarmPeriod(int(stretched/mp))
}

// shortenedPeriodsNote names, in a Period refusal, the shortened periods an emulator with a metric period under
// 10 s accepts too ("" at the default).
func (e *Emulator) shortenedPeriodsNote() string {
	if e.opts.MetricPeriod >= DefaultMetricPeriod {
		return ""
	}
	return fmt.Sprintf(" (or those values × %s/%s: this emulator's metric period over SageMaker's)", e.opts.MetricPeriod, DefaultMetricPeriod)
}

// putAlarmLocked validates and stores an alarm, keeping its state when only its configuration changes; e.mu
// must be held.
func (e *Emulator) putAlarmLocked(in putMetricAlarmInput) (*alarmRec, *apiError) {
	for _, c := range []struct {
		value, member string
		set           []string
	}{
		{in.Statistic, "statistic", basicStatistics},
		{in.ComparisonOperator, "comparisonOperator", comparisonOperatorEnum},
		{in.Unit, "unit", standardUnitEnum},
	} {
		if err := checkEnum(c.value, c.member, c.set); err != nil {
			return nil, err
		}
	}
	switch {
	case in.AlarmName == "":
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameter AlarmName is required.")
	case len(in.Metrics) > 0:
		return nil, invalidParam("the emulator does not support metric math alarms (Metrics); give MetricName and Namespace")
	case in.MetricName == "" || in.Namespace == "":
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameters MetricName and Namespace are required.")
	case len(in.AlarmName) > 255:
		return nil, validationError(in.AlarmName, "alarmName", "Member must have length less than or equal to 255")
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
		// CloudWatch's answer, as the AWS provider for Terraform relayed it (hashicorp/terraform#24070):
		// "ValidationError: DatapointsToAlarm must be less than or equal to EvaluationPeriods".
		return nil, errorf("ValidationError", http.StatusBadRequest, "DatapointsToAlarm must be less than or equal to EvaluationPeriods.")
	case in.Threshold == nil:
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameter Threshold is required.")
	case in.ComparisonOperator == "":
		return nil, errorf("MissingParameter", http.StatusBadRequest, "The parameter ComparisonOperator is required.")
	case !contains(comparisonOperators, in.ComparisonOperator):
		return nil, invalidParam("the emulator evaluates static thresholds only (%s), not the anomaly detection operator %s.", strings.Join(comparisonOperators, ", "), in.ComparisonOperator)
	case in.TreatMissingData != "" && !contains(treatMissingDataValues, in.TreatMissingData):
		return nil, invalidParam("The parameter TreatMissingData must be one of %s.", strings.Join(treatMissingDataValues, ", "))
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

// describeAlarms lists metric alarms in name order, MaxRecords (default 50, at most 100) a page, with a
// NextToken that names the last alarm of the page.
func (e *Emulator) describeAlarms(dec decoder) (any, *apiError) {
	var in struct {
		AlarmNames      []string
		AlarmNamePrefix string
		AlarmTypes      []string
		StateValue      string
		ActionPrefix    string
		MaxRecords      *int
		NextToken       string
	}
	if err := dec(&in); err != nil {
		return nil, err
	}
	if err := checkEnum(in.StateValue, "stateValue", stateValueEnum); err != nil {
		return nil, err
	}
	for _, t := range in.AlarmTypes {
		if err := checkEnum(t, "alarmTypes", alarmTypeEnum); err != nil {
			return nil, err
		}
	}
	limit := defaultAlarmRecords
	if in.MaxRecords != nil {
		if *in.MaxRecords < 1 || *in.MaxRecords > maxAlarmRecords {
			return nil, validationError(*in.MaxRecords, "maxRecords", fmt.Sprintf("Member must have value between 1 and %d", maxAlarmRecords))
		}
		limit = *in.MaxRecords
	}
	if len(in.AlarmNames) > maxAlarmNames {
		return nil, validationError(in.AlarmNames, "alarmNames", fmt.Sprintf("Member must have length less than or equal to %d", maxAlarmNames))
	}
	if len(in.AlarmNames) > 0 && in.AlarmNamePrefix != "" {
		return nil, errorf("InvalidParameterCombination", http.StatusBadRequest, "AlarmNames and AlarmNamePrefix cannot be used together.")
	}
	after, apiErr := decodeToken(in.NextToken, alarmTokenPrefix)
	if apiErr != nil {
		return nil, apiErr
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.st.Alarms))
	for n := range e.st.Alarms {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []map[string]any{}
	next := ""
	// With AlarmTypes given, only the types named are listed; the emulator has metric alarms only.
	metricAlarms := len(in.AlarmTypes) == 0 || contains(in.AlarmTypes, "MetricAlarm")
	for _, n := range names {
		a := e.st.Alarms[n]
		switch {
		case !metricAlarms, in.NextToken != "" && n <= after,
			len(in.AlarmNames) > 0 && !contains(in.AlarmNames, n),
			!strings.HasPrefix(n, in.AlarmNamePrefix),
			in.StateValue != "" && a.State != in.StateValue,
			in.ActionPrefix != "" && !hasPrefixed(a.AlarmActions, in.ActionPrefix):
			continue
		}
		if len(out) == limit {
			next = encodeToken(alarmTokenPrefix, out[len(out)-1]["AlarmName"].(string))
			break
		}
		out = append(out, alarmView(a))
	}
	resp := map[string]any{"MetricAlarms": out, "CompositeAlarms": []any{}}
	if next != "" {
		resp["NextToken"] = next
	}
	return resp, nil
}

// encodeToken makes a NextToken of a listing: the kind's prefix and the position, opaque to the client.
func encodeToken(prefix, position string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(prefix + position))
}

// decodeToken returns the position a NextToken of the given kind holds ("" for no token), or
// InvalidNextToken when it is not one the emulator gave out for that kind.
func decodeToken(token, prefix string) (string, *apiError) {
	if token == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	if pos, ok := strings.CutPrefix(string(b), prefix); err == nil && ok {
		return pos, nil
	}
	return "", errorf("InvalidNextToken", http.StatusBadRequest, "The service returned an error: the NextToken %q is not valid.", token)
}

func hasPrefixed(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

// deleteAlarms deletes the named alarms that exist; names of no alarm are ignored, as AWS does.
func (e *Emulator) deleteAlarms(dec decoder) (any, *apiError) {
	var in struct{ AlarmNames []string }
	if err := dec(&in); err != nil {
		return nil, err
	}
	if len(in.AlarmNames) > maxAlarmNames {
		return nil, validationError(in.AlarmNames, "alarmNames", fmt.Sprintf("Member must have length less than or equal to %d", maxAlarmNames))
	}
	for _, n := range in.AlarmNames {
		if n == "" || len(n) > 255 {
			return nil, validationError(n, "alarmNames.member", "Member must have length between 1 and 255")
		}
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	deleted := false
	for _, n := range in.AlarmNames {
		if _, ok := e.st.Alarms[n]; ok {
			delete(e.st.Alarms, n)
			deleted = true
		}
	}
	if deleted {
		e.saveLocked()
	}
	return map[string]any{}, nil
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
	points := e.metrics.query(a.Namespace, a.MetricName, a.Dimensions, start, start, end, period)
	if f := e.compression(); f > 1 {
		points = e.trailingPoints(a, start, end, period, period*time.Duration(f))
	}
	need := a.DatapointsToAlarm
	if need <= 0 {
		need = a.EvaluationPeriods
	}
	var values []float64
	var breachingPts, clearPts []agg
	for _, p := range points {
		v, _ := p.stat(a.statistic())
		values = append(values, v)
		if breaches(a.ComparisonOperator, v, a.Threshold) {
			breachingPts = append(breachingPts, agg{t: p.t, sum: v})
		} else {
			clearPts = append(clearPts, agg{t: p.t, sum: v})
		}
	}
	missing := a.EvaluationPeriods - len(values)
	breaching := len(breachingPts)
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
		next, reason = alarmInsufficient, fmt.Sprintf("Insufficient Data: %d %s unknown.", a.EvaluationPeriods, map[bool]string{true: "datapoint was", false: "datapoints were"}[a.EvaluationPeriods == 1])
	}
	if next == "" {
		if breaching >= need {
			next = alarmAlarm
			reason = thresholdCrossed(a, breachingPts, true)
		} else {
			next = alarmOK
			reason = thresholdCrossed(a, clearPts, false)
		}
	}
	if next == a.State {
		return false
	}
	e.log.Printf("alarm %s: %s -> %s: %s", a.Name, a.State, next, reason)
	a.State, a.StateReason, a.StateUpdated = next, reason, now.UTC()
	return true
}

// trailingPoints are an alarm's datapoints on an emulator that compresses CloudWatch time (docs/design.md,
// "Compressed CloudWatch time"): each period's datapoint stands for the AWS period it compresses, so it is the
// statistic over the wall-clock window of that AWS period's length (window) ending where the period ends. The
// data plane runs at real speed: a 1-s datapoint of ConcurrentRequestsPerModel would be the peak of one wall
// second, lower than the 10-s peak the plan's instance model gives and AWS's alarm sees, and a scale-in alarm
// on it would fire during a surge. This is the emulator's extension; GetMetricData and GetMetricStatistics
// answer the datapoints as published. e.mu must be held.
func (e *Emulator) trailingPoints(a *alarmRec, start, end time.Time, period, window time.Duration) []agg {
	raw := e.metrics.query(a.Namespace, a.MetricName, a.Dimensions, start.Add(period-window), start.Add(period-window), end, period)
	var out []agg
	for pe := start.Add(period); !pe.After(end); pe = pe.Add(period) {
		merged := agg{t: pe.Add(-period)}
		for _, p := range raw {
			if !p.t.Before(pe.Add(-window)) && p.t.Before(pe) {
				for _, v := range p.samples {
					merged.add(v)
				}
			}
		}
		if merged.count > 0 {
			out = append(out, merged)
		}
	}
	return out
}

// thresholdCrossed is the StateReason of a transition to ALARM (breached) or OK, in CloudWatch's wording, e.g.
// "Threshold Crossed: 1 out of the last 1 datapoints [6.046241709654764 (15/08/18 21:15:00)] was less than or
// equal to the threshold (70.0) (minimum 1 datapoint for OK -> ALARM transition)." for an M out of N alarm and
// "Threshold Crossed: 1 datapoint [42.0 (30/11/26 12:00:00)] was greater than the threshold (30.0)." otherwise.
// It names the datapoints that decided the state, newest first: the breaching ones for ALARM, the others for OK.
func thresholdCrossed(a *alarmRec, pts []agg, breached bool) string {
	list := make([]string, 0, len(pts))
	for i := len(pts) - 1; i >= 0; i-- {
		list = append(list, fmt.Sprintf("%s (%s)", javaDouble(pts[i].sum), pts[i].t.UTC().Format(stateReasonTimeFormat)))
	}
	verb := "were"
	if len(pts) == 1 {
		verb = "was"
	}
	var b strings.Builder
	b.WriteString("Threshold Crossed: ")
	if a.DatapointsToAlarm > 0 {
		fmt.Fprintf(&b, "%d out of the last %d datapoints", len(pts), a.EvaluationPeriods)
	} else {
		fmt.Fprintf(&b, "%d %s", len(pts), plural(len(pts), "datapoint"))
	}
	fmt.Fprintf(&b, " [%s] %s %s the threshold (%s)", strings.Join(list, ", "), verb, operatorWords(a.ComparisonOperator, breached), javaDouble(a.Threshold))
	if a.DatapointsToAlarm > 0 {
		transition := "ALARM -> OK"
		if breached {
			transition = "OK -> ALARM"
		}
		fmt.Fprintf(&b, " (minimum %d %s for %s transition)", a.DatapointsToAlarm, plural(a.DatapointsToAlarm, "datapoint"), transition)
	}
	b.WriteString(".")
	return b.String()
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// javaDouble formats a number as CloudWatch's reasons do (Java's Double.toString): 42.0, 6.046241709654764.
func javaDouble(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if math.Abs(v) >= 1e7 || (v != 0 && math.Abs(v) < 1e-3) {
		s = strings.Replace(strconv.FormatFloat(v, 'E', -1, 64), "E+", "E", 1)
		if m, exp, ok := strings.Cut(s, "E"); ok && !strings.Contains(m, ".") {
			s = m + ".0E" + exp
		}
		return s
	}
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
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
