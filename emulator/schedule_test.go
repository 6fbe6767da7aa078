package emulator

import (
	"testing"
	"time"
)

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// TestScheduleNext: the instants of at, rate and cron expressions, with Timezone, StartTime and EndTime, as the
// API reference and the user guide's scheduled-scaling pages define them (quoted in schedule.go).
func TestScheduleNext(t *testing.T) {
	start, end := utc("2026-12-03T00:00:07Z"), utc("2026-12-03T13:30:00Z")
	for _, tc := range []struct {
		expr, tz string
		after    string
		w        window
		want     string // "" for none
	}{
		// At expressions: one instant, in the time zone (UTC by default).
		{"at(2026-12-02T18:00:00)", "", "2026-12-02T17:00:00Z", window{}, "2026-12-02T18:00:00Z"},
		{"at(2026-12-02T18:00:00)", "", "2026-12-02T18:00:00Z", window{}, ""},
		{"at(2026-12-02T08:00:00)", "Pacific/Tahiti", "2026-12-02T17:00:00Z", window{}, "2026-12-02T18:00:00Z"},
		// Rate expressions: from when the action was put, or from StartTime, which runs itself.
		{"rate(5 minutes)", "", "2026-12-02T12:00:00Z", window{anchor: utc("2026-12-02T12:00:00Z")}, "2026-12-02T12:05:00Z"},
		{"rate(5 minutes)", "", "2026-12-02T12:07:00Z", window{anchor: utc("2026-12-02T12:00:00Z")}, "2026-12-02T12:10:00Z"},
		{"rate(1 hour)", "", "2026-12-02T12:00:00Z", window{start: &start}, "2026-12-03T00:00:07Z"},
		{"rate(1 hour)", "", "2026-12-03T00:00:07Z", window{start: &start}, "2026-12-03T01:00:07Z"},
		{"rate(1 day)", "", "2026-12-03T00:00:07Z", window{start: &start, end: &end}, ""},
		{"rate(2 hours)", "", "2026-12-03T10:00:07Z", window{start: &start, end: &end}, "2026-12-03T12:00:07Z"},
		// The guide's examples: "30 6 ? * MON *" every Monday at 6:30 AM; "15 12 * * ? *" every day at 12:15pm.
		{"cron(30 6 ? * MON *)", "", "2026-12-02T17:00:00Z", window{}, "2026-12-07T06:30:00Z"},
		{"cron(15 12 * * ? *)", "", "2026-12-02T17:00:00Z", window{}, "2026-12-03T12:15:00Z"},
		{"cron(0 8 * * ? *)", "Pacific/Tahiti", "2026-12-02T17:00:00Z", window{}, "2026-12-02T18:00:00Z"},
		// Increments, names, ranges, lists.
		{"cron(0/20 * * * ? *)", "", "2026-12-02T12:05:00Z", window{}, "2026-12-02T12:20:00Z"},
		{"cron(1/10 * * * ? *)", "", "2026-12-02T12:05:00Z", window{}, "2026-12-02T12:11:00Z"},
		{"cron(0 9 ? * MON-FRI *)", "", "2026-12-04T10:00:00Z", window{}, "2026-12-07T09:00:00Z"},
		{"cron(0 9 1,15 JAN,JUL ? *)", "", "2026-12-02T00:00:00Z", window{}, "2027-01-01T09:00:00Z"},
		// L, W, #: the last day, the last weekday, the nearest weekday, the last Friday, the second Tuesday.
		{"cron(0 9 L * ? *)", "", "2026-12-02T00:00:00Z", window{}, "2026-12-31T09:00:00Z"},
		{"cron(0 9 LW * ? *)", "", "2027-01-02T00:00:00Z", window{}, "2027-01-29T09:00:00Z"},
		{"cron(0 9 3W * ? *)", "", "2027-01-02T00:00:00Z", window{}, "2027-01-04T09:00:00Z"},
		{"cron(0 10 ? * 6L 2027)", "", "2026-12-02T00:00:00Z", window{}, "2027-01-29T10:00:00Z"},
		{"cron(0 9 ? * 3#2 *)", "", "2026-12-02T00:00:00Z", window{}, "2026-12-08T09:00:00Z"},
		{"cron(0 9 ? * L *)", "", "2026-12-02T00:00:00Z", window{}, "2026-12-05T09:00:00Z"},
		// A year the expression excludes: no instant.
		{"cron(0 9 * * ? 2025)", "", "2026-12-02T00:00:00Z", window{}, ""},
		// StartTime runs, then the recurrence.
		{"cron(0 12 * * ? *)", "", "2026-12-02T17:00:00Z", window{start: &start}, "2026-12-03T00:00:07Z"},
		{"cron(0 12 * * ? *)", "", "2026-12-03T00:00:07Z", window{start: &start}, "2026-12-03T12:00:00Z"},
		{"cron(0 14 * * ? *)", "", "2026-12-03T00:00:07Z", window{start: &start, end: &end}, ""},
		// Daylight saving time: 02:30 on the day New York skips 02:00-03:00 runs at 03:30 EDT.
		{"cron(30 2 * * ? *)", "America/New_York", "2027-03-13T08:00:00Z", window{}, "2027-03-14T07:30:00Z"},
		{"cron(30 2 * * ? *)", "America/New_York", "2027-03-14T08:00:00Z", window{}, "2027-03-15T06:30:00Z"},
	} {
		s, err := parseSchedule(tc.expr)
		if err != nil {
			t.Errorf("parseSchedule(%q): %v", tc.expr, err)
			continue
		}
		loc := time.UTC
		if tc.tz != "" {
			if loc, err = time.LoadLocation(tc.tz); err != nil {
				t.Fatal(err)
			}
		}
		got := s.next(utc(tc.after), loc, tc.w)
		want := time.Time{}
		if tc.want != "" {
			want = utc(tc.want)
		}
		if !got.Equal(want) {
			t.Errorf("%s (%s) after %s: next %v, want %v", tc.expr, tc.tz, tc.after, got, want)
		}
	}
}

// TestScheduleRefused: expressions outside the documented forms are refused.
func TestScheduleRefused(t *testing.T) {
	for _, expr := range badSchedules {
		if _, err := parseSchedule(expr); err == nil {
			t.Errorf("parseSchedule(%q) accepted it", expr)
		}
	}
}

// badSchedules break the forms of PutScheduledAction's Schedule, each in one way.
var badSchedules = []string{
	"every(5 minutes)",        // not at, rate or cron
	"0 8 * * ? *",             // cron fields without cron(...)
	"at(2026-13-01T00:00:00)", // month 13
	"at(2026-12-01 00:00:00)", // no T
	"at(2026-12-01)",          // no time
	"rate(0 minutes)",         // "value is a positive integer"
	"rate(-5 minutes)",        // likewise
	"rate(five minutes)",      // likewise
	"rate(5 weeks)",           // unit outside minute(s), hour(s), day(s)
	"rate(5)",                 // no unit
	"cron(0 8 * * ?)",         // five fields, not six
	"cron(0 8 * * ? * *)",     // seven
	"cron(0 8 * * * *)",       // * in both Day-of-month and Day-of-week
	"cron(0 8 1 * MON *)",     // values in both
	"cron(0 8 ? * ? *)",       // ? in both
	"cron(60 8 * * ? *)",      // minute 60
	"cron(0 24 * * ? *)",      // hour 24
	"cron(0 8 32 * ? *)",      // day 32
	"cron(0 8 * 13 ? *)",      // month 13
	"cron(0 8 * FOO ? *)",     // no such month
	"cron(0 8 ? * 8 *)",       // day of week 8
	"cron(0 8 * * ? 2200)",    // year past 2199
	"cron(0 8 * * ? 1969)",    // year before 1970
	"cron(0 8 ? * 3#1,6#3 *)", // two # expressions
	"cron(0 8 ? * 3#6 *)",     // a sixth Tuesday
	"cron(0/0 8 * * ? *)",     // increment 0
	"cron(30-10 8 * * ? *)",   // a range that ends before it starts
	"cron(0 8 W * ? *)",       // W without a day
}
