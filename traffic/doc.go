// Package traffic turns a user's own traffic into traces the simulator reads, and measures them
// (docs/design.md, "Traffic is an input"). It parses no flags and calls no AWS API: `tts-bench traffic` wires
// it to files and, for Fetch, to CloudWatch through cloud.ReadInvocations.
//
// # Traces
//
// A request trace keeps every request's time: Import reads a request log (CSV with a header row, or JSON
// lines; one row per request; the time in RFC 3339, Unix seconds or milliseconds, or a SQL date and time, see
// TimeFormats), sorts it in bounded memory and writes the format simulate.ReadRequests reads:
//
//	# speech-infra request trace v1
//	# start 2024-03-01T12:00:00.1234567Z
//	# imported from access.csv, column "ts", time format sql (a time without a zone is UTC)
//	# 7000000 rows read, 0 skipped as bad; scale 1, time scale 1
//	offset_s
//	0
//	0.0125
//	...
//	# end 7000000 requests
//
// Each row after offset_s is one request, in seconds since the start (the first request), in order; the end
// line counts them, so that a trace cut short is refused rather than read as a shorter one.
// simulate.ParseCSV reads it as a rate trace at 1-s steps, so `tts-bench simulate --trace`, `plan --trace` and
// `replay --trace` take it as they take a CSV of "timestamp,rps".
//
// A rate trace is the CSV of "timestamp,rps" rows simulate.ParseCSV reads; Fetch writes one from the
// endpoint's CloudWatch history, one row per period.
//
// # What Describe measures
//
// Every measure is computed from the trace's mean rate in each second since its start (Series.PerSecond; a rate
// trace's rows are spread over the seconds they cover). "The x-s rate at t" is the mean rate over [t, t + x).
//
//   - The mean rate: all requests ÷ the trace's duration.
//   - The peaks at 1 s, 10 s and 1 minute: the highest 1-s, 10-s and 60-s rate, windows sliding by 1 s.
//   - The surge ratio at the T_plan horizon: for each start minute m (60 s, 120 s, ... after the trace's start,
//     with m + T_plan within the trace), the highest 10-s rate at any t in [m, m + T_plan − 10 s] ÷ the
//     1-minute rate over the minute before m, [m − 60 s, m): how much the load rose above what the fleet was
//     sized for when a scale-out started, before the new instance could serve. Start minutes whose minute
//     before had no request are left out (and counted). Reported as quantiles p50, p90, p95 and p99 over the
//     start minutes (nearest rank: the smallest ratio at or above that share of them) and the maximum.
//   - The burst factor: the 10-s peak (the first, of equal ones) ÷ the mean rate of the 5 minutes centred on
//     it, [t + 5 s − 150 s, t + 5 s + 150 s) for the peak at t (moved to lie within the trace at its ends): how
//     sharply the peak rises above the load around it.
//   - The daily profile: the mean rate in each hour of the day (UTC), over every time the trace covers that
//     hour, when the trace lasts at least 24 hours and says when it starts; the weekly profile, per weekday
//     (Monday first), when it lasts at least 7 days.
//
// A rate trace resolves nothing finer than its step: its peaks over less than the step are the step's mean,
// and Describe says so.
package traffic
