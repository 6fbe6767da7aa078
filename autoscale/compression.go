package autoscale

import "time"

// CloudWatch time compression: the local emulator's extension, not AWS's (docs/design.md, "Compressed
// CloudWatch time"). An emulator that runs its start-up profile TimeScale times faster than AWS also runs
// CloudWatch's and Application Auto Scaling's own durations Compression(TimeScale) times faster: the metric
// period, the alarm periods, the default cooldown. Requests are served at real speed, so nothing of the data
// plane is compressed. On AWS the factor is 1.

// MetricPeriod is the period of SageMaker's high-resolution ConcurrentRequestsPerModel metric on AWS (10-s
// datapoints). Every AWS-facing period of CloudWatch alarms is a whole number of it or of a minute.
const MetricPeriod = 10 * time.Second

// DefaultCooldown is Application Auto Scaling's cooldown for SageMaker endpoint variants when a policy gives
// none (its user guide lists 300 seconds for them).
const DefaultCooldown = 300 * time.Second

// compressions are the factors a CloudWatch duration may be divided by: the divisors of MetricPeriod's 10 s,
// so that every AWS period (10, 20, 30 s, any multiple of 60 s) and cooldown stays a whole number of seconds.
var compressions = []int{10, 5, 2, 1}

// Compression is the CloudWatch compression factor of an emulator running at the time scale: the largest of 1,
// 2, 5 and 10 not above it (1 for a time scale below 2, and on AWS). The metric period is then 10 s ÷ the
// factor, at least 1 s: alarm periods are whole seconds.
func Compression(timeScale float64) int {
	for _, f := range compressions {
		if timeScale >= float64(f) {
			return f
		}
	}
	return 1
}

// ValidCompression reports whether f is a factor Compression can return.
func ValidCompression(f int) bool {
	for _, c := range compressions {
		if f == c {
			return true
		}
	}
	return false
}

// Compress divides an AWS duration d by the compression factor f (a factor below 1 counts as 1).
func Compress(d time.Duration, f int) time.Duration {
	if f <= 1 {
		return d
	}
	return d / time.Duration(f)
}

// CompressS divides an AWS duration of s seconds by the compression factor f (a factor below 1 counts as 1).
func CompressS(s float64, f int) float64 {
	if f <= 1 {
		return s
	}
	return s / float64(f)
}
