package emulator

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// CloudWatch alarm states.
const (
	alarmOK           = "OK"
	alarmAlarm        = "ALARM"
	alarmInsufficient = "INSUFFICIENT_DATA"
)

// comparisonOperators are the static-threshold operators the emulator evaluates.
var comparisonOperators = []string{"GreaterThanOrEqualToThreshold", "GreaterThanThreshold", "LessThanThreshold", "LessThanOrEqualToThreshold"}

// The enum value sets of botocore's CloudWatch model (monitoring 2010-08-01), in its order.
var (
	basicStatistics         = []string{"SampleCount", "Average", "Sum", "Minimum", "Maximum"}
	comparisonOperatorEnum  = append(slices.Clone(comparisonOperators), "LessThanLowerOrGreaterThanUpperThreshold", "LessThanLowerThreshold", "GreaterThanUpperThreshold")
	stateValueEnum          = []string{alarmOK, alarmAlarm, alarmInsufficient}
	alarmTypeEnum           = []string{"CompositeAlarm", "MetricAlarm"}
	scanByEnum              = []string{"TimestampDescending", "TimestampAscending"}
	treatMissingDataValues  = []string{"breaching", "notBreaching", "ignore", "missing"}
	standardUnitEnum        = []string{"Seconds", "Microseconds", "Milliseconds", "Bytes", "Kilobytes", "Megabytes", "Gigabytes", "Terabytes", "Bits", "Kilobits", "Megabits", "Gigabits", "Terabits", "Percent", "Count", "Bytes/Second", "Kilobytes/Second", "Megabytes/Second", "Gigabytes/Second", "Terabytes/Second", "Bits/Second", "Kilobits/Second", "Megabits/Second", "Gigabits/Second", "Terabits/Second", "Count/Second", "None"}
	subMinutePeriods        = []int{1, 5, 10, 20, 30}
	startAlignedSubMinute   = []int{5, 10, 20, 30}
	maxStatisticsDatapoints = 1440
)

// Limits of the CloudWatch operations (botocore's model and the API reference).
const (
	maxAlarmRecords       = 100
	defaultAlarmRecords   = 50
	maxAlarmNames         = 100
	maxMetricDataQueries  = 500
	defaultMaxDatapoints  = 100800
	maxBasicStatistics    = 5
	maxExtendedStatistics = 10
	alarmTokenPrefix      = "alarms:"
	metricDataTokenPrefix = "metricdata:"
	stateReasonTimeFormat = "02/01/06 15:04:05"
	fifteenDays           = 15 * 24 * time.Hour
	sixtyThreeDays        = 63 * 24 * time.Hour
	// longestRetention is the longest CloudWatch keeps a datapoint (GetMetricData in the API reference): "Data
	// points with a period of 3600 seconds (1 hour) are available for 455 days (15 months)."
	longestRetention = 455 * 24 * time.Hour
)

// The limits of an alarm's periods, from PutMetricAlarm's Period in the API reference: "An alarm's total current
// evaluation period can be no longer than seven days, so Period multiplied by EvaluationPeriods can't be more
// than 604,800 seconds. For alarms with a period of less than one hour (3,600 seconds), the total evaluation
// period can't be longer than one day (86,400 seconds)."
const (
	maxAlarmEvaluationS      = 604800
	shortAlarmPeriodS        = 3600
	maxShortAlarmEvaluationS = 86400
)

// alarmSubMinutePeriods are the periods under a minute PutMetricAlarm accepts: "Valid values are 10, 20, 30, and
// any multiple of 60."
var alarmSubMinutePeriods = []int{10, 20, 30}

func invalidParam(format string, args ...any) *apiError {
	return errorf("InvalidParameterValue", http.StatusBadRequest, format, args...)
}

// enumError is CloudWatch's answer to a value outside a member's enum: ValidationError (HTTP 400) with the
// service's "1 validation error detected: Value '...' at '...' failed to satisfy constraint: ..." message.
func enumError(value, member string, set []string) *apiError {
	return errorf("ValidationError", http.StatusBadRequest, "1 validation error detected: Value '%s' at '%s' failed to satisfy constraint: Member must satisfy enum value set: [%s]", value, member, strings.Join(set, ", "))
}

// checkEnum returns enumError unless value is empty (not given) or in set.
func checkEnum(value, member string, set []string) *apiError {
	if value == "" || slices.Contains(set, value) {
		return nil
	}
	return enumError(value, member, set)
}

// validationError is CloudWatch's answer to a value outside a member's length or range constraint.
func validationError(value any, member, constraint string) *apiError {
	return errorf("ValidationError", http.StatusBadRequest, "1 validation error detected: Value '%v' at '%s' failed to satisfy constraint: %s", value, member, constraint)
}

// checkPeriod accepts the periods CloudWatch serves: 1, 5, 10, 20, 30 or a multiple of 60 seconds.
func checkPeriod(period int, member string) *apiError {
	switch {
	case period < 1:
		return validationError(period, member, "Member must have value greater than or equal to 1")
	case period%60 == 0 || slices.Contains(subMinutePeriods, period):
		return nil
	}
	return invalidParam("The parameter %s must be 1, 5, 10, 20, 30, 60 or a multiple of 60 seconds, not %d.", member, period)
}

// alignStart rounds a query's StartTime down as CloudWatch does: to the period for periods of 5, 10, 20 and 30
// seconds; otherwise to the minute when it is less than 15 days ago, to 5 minutes up to 63 days, to the hour
// beyond.
func alignStart(start, now time.Time, period int) time.Time {
	switch age := now.Sub(start); {
	case slices.Contains(startAlignedSubMinute, period):
		return start.Truncate(time.Duration(period) * time.Second)
	case age < fifteenDays:
		return start.Truncate(time.Minute)
	case age < sixtyThreeDays:
		return start.Truncate(5 * time.Minute)
	default:
		return start.Truncate(time.Hour)
	}
}

// retainedFrom is the oldest time whose data CloudWatch still serves at the given period: datapoints of a
// period under a minute are kept for 3 hours.
func retainedFrom(start, now time.Time, period int) time.Time {
	if period < 60 {
		if oldest := now.Add(-subMinuteRetention); start.Before(oldest) {
			return oldest
		}
	}
	return start
}

// queryStart is where a metric read of the given period starts: StartTime rounded down as CloudWatch does
// (alignStart) and, when that is older than CloudWatch keeps any datapoint (longestRetention), moved forward by
// whole periods to the last datapoint timestamp of the request's grid at or before that limit. A read from the
// year 1 thus stamps its datapoints where AWS would, and never works with spans a time.Duration cannot hold (about
// 292 years): the emulator keeps metricRetention of data, so nothing older is lost.
func queryStart(start, now time.Time, period int) time.Time {
	start = alignStart(start, now, period)
	oldest := now.Add(-longestRetention)
	if !start.Before(oldest) {
		return start
	}
	p := int64(period)
	skip := (oldest.Unix() - start.Unix()) / p
	return time.Unix(start.Unix()+skip*p, int64(start.Nanosecond())).UTC()
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

// mathValue is the value of a metric math expression: a time series or, for a constant, a number.
type mathValue struct {
	series *timeSeries
	scalar float64
}

// mathExpr is a parsed metric math expression.
type mathExpr interface {
	eval(m *mathEval) (mathValue, *apiError)
}

type mathNumber float64

type mathID string

type mathSumMetrics struct{}

type mathBinary struct {
	op   byte
	l, r mathExpr
}

func (n mathNumber) eval(*mathEval) (mathValue, *apiError) { return mathValue{scalar: float64(n)}, nil }

func (id mathID) eval(m *mathEval) (mathValue, *apiError) {
	ts, err := m.series(string(id))
	if err != nil {
		return mathValue{}, err
	}
	return mathValue{series: &ts}, nil
}

// eval of SUM(METRICS()) adds, at each timestamp, the values of every metric (not expression) query that has one.
func (mathSumMetrics) eval(m *mathEval) (mathValue, *apiError) {
	sums := map[time.Time]float64{}
	for _, q := range m.queries {
		if q.MetricStat == nil {
			continue
		}
		ts, err := m.series(q.ID)
		if err != nil {
			return mathValue{}, err
		}
		for i, t := range ts.ts {
			sums[t] += ts.vs[i]
		}
	}
	out := timeSeries{}
	for t := range sums {
		out.ts = append(out.ts, t)
	}
	slices.SortFunc(out.ts, func(a, b time.Time) int { return a.Compare(b) })
	for _, t := range out.ts {
		out.vs = append(out.vs, sums[t])
	}
	return mathValue{series: &out}, nil
}

// eval applies the operator pointwise: a series with a number at each of its points, two series at the
// timestamps both have. A result that is not a finite number (a division by zero) is no datapoint.
func (b mathBinary) eval(m *mathEval) (mathValue, *apiError) {
	l, err := b.l.eval(m)
	if err != nil {
		return mathValue{}, err
	}
	r, err := b.r.eval(m)
	if err != nil {
		return mathValue{}, err
	}
	apply := func(x, y float64) float64 {
		switch b.op {
		case '+':
			return x + y
		case '-':
			return x - y
		case '*':
			return x * y
		}
		return x / y
	}
	if l.series == nil && r.series == nil {
		return mathValue{scalar: apply(l.scalar, r.scalar)}, nil
	}
	out := timeSeries{}
	push := func(t time.Time, v float64) {
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			out.ts, out.vs = append(out.ts, t), append(out.vs, v)
		}
	}
	switch {
	case r.series == nil:
		for i, t := range l.series.ts {
			push(t, apply(l.series.vs[i], r.scalar))
		}
	case l.series == nil:
		for i, t := range r.series.ts {
			push(t, apply(l.scalar, r.series.vs[i]))
		}
	default:
		right := map[time.Time]float64{}
		for i, t := range r.series.ts {
			right[t] = r.series.vs[i]
		}
		for i, t := range l.series.ts {
			if y, ok := right[t]; ok {
				push(t, apply(l.series.vs[i], y))
			}
		}
	}
	return mathValue{series: &out}, nil
}

// mathParser parses the metric math the emulator evaluates: query ids, numbers, + - * /, parentheses, unary
// minus and SUM(METRICS()).
type mathParser struct {
	src string
	pos int
}

func parseExpression(src string) (mathExpr, error) {
	p := &mathParser{src: src}
	e, err := p.sum()
	if err != nil {
		return nil, err
	}
	p.space()
	if p.pos != len(p.src) {
		return nil, fmt.Errorf("unexpected %q at position %d", p.src[p.pos:], p.pos+1)
	}
	return e, nil
}

func (p *mathParser) space() {
	for p.pos < len(p.src) && (p.src[p.pos] == ' ' || p.src[p.pos] == '\t') {
		p.pos++
	}
}

// peek returns the next non-space byte, or 0 at the end.
func (p *mathParser) peek() byte {
	p.space()
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return 0
}

func (p *mathParser) sum() (mathExpr, error) {
	l, err := p.product()
	if err != nil {
		return nil, err
	}
	for c := p.peek(); c == '+' || c == '-'; c = p.peek() {
		p.pos++
		r, err := p.product()
		if err != nil {
			return nil, err
		}
		l = mathBinary{op: c, l: l, r: r}
	}
	return l, nil
}

func (p *mathParser) product() (mathExpr, error) {
	l, err := p.factor()
	if err != nil {
		return nil, err
	}
	for c := p.peek(); c == '*' || c == '/'; c = p.peek() {
		p.pos++
		r, err := p.factor()
		if err != nil {
			return nil, err
		}
		l = mathBinary{op: c, l: l, r: r}
	}
	return l, nil
}

func (p *mathParser) factor() (mathExpr, error) {
	c := p.peek()
	switch {
	case c == 0:
		return nil, errors.New("the expression ends where a value was expected")
	case c == '(':
		p.pos++
		e, err := p.sum()
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, fmt.Errorf("missing ')' at position %d", p.pos+1)
		}
		p.pos++
		return e, nil
	case c == '-':
		p.pos++
		e, err := p.factor()
		if err != nil {
			return nil, err
		}
		return mathBinary{op: '-', l: mathNumber(0), r: e}, nil
	case c == '.' || (c >= '0' && c <= '9'):
		start := p.pos
		for p.pos < len(p.src) && (p.src[p.pos] == '.' || (p.src[p.pos] >= '0' && p.src[p.pos] <= '9')) {
			p.pos++
		}
		v, err := strconv.ParseFloat(p.src[start:p.pos], 64)
		if err != nil {
			return nil, fmt.Errorf("bad number %q", p.src[start:p.pos])
		}
		return mathNumber(v), nil
	}
	start := p.pos
	for p.pos < len(p.src) && (p.src[p.pos] == '_' || isAlnum(p.src[p.pos])) {
		p.pos++
	}
	word := p.src[start:p.pos]
	switch {
	case word == "":
		return nil, fmt.Errorf("unexpected %q at position %d", p.src[start:start+1], start+1)
	case metricDataID.MatchString(word):
		return mathID(word), nil
	case word == "SUM":
		rest := strings.Join(strings.Fields(p.src[p.pos:]), "")
		if !strings.HasPrefix(rest, "(METRICS())") {
			return nil, errors.New("SUM is supported as SUM(METRICS()) only")
		}
		// Skip "(METRICS())" and the spaces within it.
		for n := 0; n < len("(METRICS())"); p.pos++ {
			if p.src[p.pos] != ' ' && p.src[p.pos] != '\t' {
				n++
			}
		}
		return mathSumMetrics{}, nil
	}
	return nil, fmt.Errorf("the function or name %s is not supported", word)
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
