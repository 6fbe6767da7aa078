package emulator

import (
	"net/http"
	"slices"
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
