package traffic

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Time formats of a request log's time column (ImportOptions.TimeFormat).
const (
	// TimeAuto decides from the first row that has a time: digits are Unix seconds, or milliseconds from
	// 100000000000 on (1973 in milliseconds, year 5138 in seconds); a "T" after the date is RFC 3339; a space
	// after the date is SQL. Every later row must have the same format.
	TimeAuto = "auto"
	// TimeRFC3339 is RFC 3339 with a zone: 2024-03-01T12:00:00Z, 2024-03-01T13:00:00.25+01:00.
	TimeRFC3339 = "rfc3339"
	// TimeUnix is seconds since 1970-01-01 UTC, with an optional fraction: 1709294400, 1709294400.125.
	TimeUnix = "unix"
	// TimeUnixMS is milliseconds since 1970-01-01 UTC, with an optional fraction: 1709294400125.
	TimeUnixMS = "unix-ms"
	// TimeSQL is a date and a time separated by a space, with up to 9 fractional digits (SQL Server's
	// datetime2 writes 7) and an optional zone; without a zone the time is UTC: 2024-03-01 12:00:00.1234567,
	// 2024-03-01 13:00:00+01:00, 2024-03-01 13:00:00.5 +01:00, 2024-03-01 12:00:00+00 (PostgreSQL).
	TimeSQL = "sql"
)

// TimeFormats lists the values of ImportOptions.TimeFormat.
var TimeFormats = []string{TimeAuto, TimeRFC3339, TimeUnix, TimeUnixMS, TimeSQL}

// unixMSFrom is where auto detection takes digits for milliseconds rather than seconds.
const unixMSFrom = 100_000_000_000

// Times are held as nanoseconds since the Unix epoch (int64): 1678 to 2262.
var (
	minTime = time.Unix(0, math.MinInt64).UTC()
	maxTime = time.Unix(0, math.MaxInt64).UTC()
)

// detectTimeFormat tells the format of s for TimeAuto, or "" when it cannot.
func detectTimeFormat(s string) string {
	if s == "" {
		return ""
	}
	if isDecimal(s) {
		intPart, _, _ := strings.Cut(s, ".")
		// unixMSFrom has 12 digits: from there on the number is milliseconds.
		if len(strings.TrimLeft(intPart, "0")) >= len(fmt.Sprint(unixMSFrom)) {
			return TimeUnixMS
		}
		return TimeUnix
	}
	if len(s) > 10 && s[4] == '-' && s[7] == '-' {
		switch s[10] {
		case 'T', 't':
			return TimeRFC3339
		case ' ':
			return TimeSQL
		}
	}
	return ""
}

// isDecimal says whether s is digits with an optional fraction: 123, 123.5, 123.
func isDecimal(s string) bool {
	intPart, frac, hasDot := strings.Cut(s, ".")
	if intPart == "" {
		return false
	}
	for _, c := range intPart {
		if c < '0' || c > '9' {
			return false
		}
	}
	if hasDot {
		for _, c := range frac {
			if c < '0' || c > '9' {
				return false
			}
		}
	}
	return true
}

// parseTime reads s in format (not TimeAuto) as nanoseconds since the Unix epoch.
func parseTime(format, s string) (int64, error) {
	switch format {
	case TimeUnix:
		return parseUnix(s, 9)
	case TimeUnixMS:
		return parseUnix(s, 6)
	case TimeRFC3339:
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return 0, fmt.Errorf("not an RFC 3339 time with a zone (2024-03-01T12:00:00Z)")
		}
		return unixNano(t)
	case TimeSQL:
		return parseSQL(s)
	}
	return 0, fmt.Errorf("unknown time format %q", format)
}

// parseUnix reads digits with an optional fraction as a count of units of 10^scale nanoseconds (scale 9:
// seconds, 6: milliseconds), exactly: no float rounds the fraction. Digits past a nanosecond are dropped.
func parseUnix(s string, scale int) (int64, error) {
	what := "Unix seconds (1709294400 or 1709294400.125)"
	if scale == 6 {
		what = "Unix milliseconds (1709294400125)"
	}
	if !isDecimal(s) {
		return 0, fmt.Errorf("not %s", what)
	}
	intPart, frac, _ := strings.Cut(s, ".")
	unit := int64(math.Pow10(scale))
	var whole int64
	for _, c := range intPart {
		if whole > (math.MaxInt64-9)/10 {
			return 0, errors.New("too far from 1970 (times run from 1678 to 2262)")
		}
		whole = whole*10 + int64(c-'0')
	}
	if whole > math.MaxInt64/unit {
		return 0, errors.New("too far from 1970 (times run from 1678 to 2262)")
	}
	ns := whole * unit
	if len(frac) > scale {
		frac = frac[:scale]
	}
	var f int64
	for _, c := range frac {
		f = f*10 + int64(c-'0')
	}
	f *= int64(math.Pow10(scale - len(frac)))
	if ns > math.MaxInt64-f {
		return 0, errors.New("too far from 1970 (times run from 1678 to 2262)")
	}
	return ns + f, nil
}

// sqlLayouts are the layouts of TimeSQL; a fractional second after the seconds is accepted by each (time.Parse
// takes one even where the layout has none).
var sqlLayouts = []string{"2006-01-02 15:04:05", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04:05 Z07:00", "2006-01-02 15:04:05-07", "2006-01-02 15:04:05 -07"}

func parseSQL(s string) (int64, error) {
	if len(s) < 19 || s[10] != ' ' {
		return 0, errors.New("not a SQL date and time (2024-03-01 12:00:00.1234567)")
	}
	for _, layout := range sqlLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return unixNano(t)
		}
	}
	return 0, errors.New("not a SQL date and time (2024-03-01 12:00:00.1234567, optionally with a zone: +01:00)")
}

func unixNano(t time.Time) (int64, error) {
	if t.Before(minTime) || t.After(maxTime) {
		return 0, errors.New("outside the years 1678 to 2262")
	}
	return t.UnixNano(), nil
}
