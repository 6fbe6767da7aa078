package emulator

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	// The IANA time zone database, built in: Timezone names resolve the same on a machine without
	// /usr/share/zoneinfo.
	_ "time/tzdata"
)

// A schedule is a parsed Schedule of PutScheduledAction: "The following formats are supported: At expressions -
// "at(yyyy-mm-ddThh:mm:ss)"; Rate expressions - "rate(value unit)"; Cron expressions - "cron(fields)"" (API
// reference, PutScheduledAction).
type schedule struct {
	kind string // "at", "rate" or "cron"
	// at is the one-time instant's wall clock (its location is applied when the schedule is evaluated).
	at time.Time
	// every is a rate expression's interval.
	every time.Duration
	cron  *cronExpr
}

// parseSchedule reads an at, rate or cron expression. The error says what is wrong with it.
func parseSchedule(s string) (*schedule, error) {
	open := strings.IndexByte(s, '(')
	if open < 0 || !strings.HasSuffix(s, ")") {
		return nil, fmt.Errorf("use at(yyyy-mm-ddThh:mm:ss), rate(value unit) or cron(fields)")
	}
	kind, body := s[:open], s[open+1:len(s)-1]
	switch kind {
	case "at":
		// At expressions - "at(yyyy-mm-ddThh:mm:ss)".
		t, err := time.Parse("2006-01-02T15:04:05", body)
		if err != nil {
			return nil, fmt.Errorf("an at expression is at(yyyy-mm-ddThh:mm:ss): %q is not a date and time of that form", body)
		}
		return &schedule{kind: "at", at: t}, nil
	case "rate":
		// "For rate expressions, value is a positive integer and unit is minute | minutes | hour | hours | day |
		// days."
		f := strings.Fields(body)
		if len(f) != 2 {
			return nil, fmt.Errorf("a rate expression is rate(value unit): %q is not", body)
		}
		n, err := strconv.Atoi(f[0])
		if err != nil || n < 1 {
			return nil, fmt.Errorf("the value of a rate expression is a positive integer, not %q", f[0])
		}
		unit := map[string]time.Duration{"minute": time.Minute, "minutes": time.Minute, "hour": time.Hour,
			"hours": time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour}[f[1]]
		if unit == 0 {
			return nil, fmt.Errorf("the unit of a rate expression is minute, minutes, hour, hours, day or days, not %q", f[1])
		}
		// A value too large for the duration type is no interval the emulator can keep.
		if int64(n) > int64(200*365*24*time.Hour/unit) {
			return nil, fmt.Errorf("the rate %s is longer than the emulator's 200-year horizon", body)
		}
		return &schedule{kind: "rate", every: time.Duration(n) * unit}, nil
	case "cron":
		c, err := parseCron(body)
		if err != nil {
			return nil, err
		}
		return &schedule{kind: "cron", cron: c}, nil
	}
	return nil, fmt.Errorf("use at(yyyy-mm-ddThh:mm:ss), rate(value unit) or cron(fields), not %s(...)", kind)
}

// window bounds a recurring schedule: "When you specify start and end times with a recurring schedule using a
// cron expression or rates, they form the boundaries for when the recurring action starts and stops."
// (PutScheduledAction). anchor is where a rate without a start time counts its intervals from: when the
// action was put.
type window struct {
	start, end *time.Time
	anchor     time.Time
}

// next is the schedule's first instant strictly after after, in location loc, or the zero time when it has none.
//
//   - at: "At expressions are useful for one-time schedules." Its one instant, in loc ("Specifies the time zone
//     used when setting a scheduled action by using an at or cron expression. If a time zone is not provided,
//     UTC is used by default.").
//   - rate and cron: "If you specify a start time, Application Auto Scaling performs the action at this time,
//     and then performs the action based on the specified recurrence." and "If you specify an end time, the
//     action stops repeating after this time." (Schedule recurring scaling actions using Application Auto
//     Scaling, user guide). A rate without a start time recurs every interval from when the action was put.
func (s *schedule) next(after time.Time, loc *time.Location, w window) time.Time {
	var t time.Time
	switch s.kind {
	case "at":
		at := localTime(s.at.Year(), s.at.Month(), s.at.Day(), s.at.Hour(), s.at.Minute(), loc).Add(time.Duration(s.at.Second()) * time.Second)
		if at.After(after) {
			t = at
		}
	case "rate":
		from := w.anchor
		if w.start != nil {
			from = *w.start
			if from.After(after) {
				t = from
				break
			}
		} else {
			from = from.Add(s.every)
			if from.After(after) {
				t = from
				break
			}
		}
		// The first from + k*every strictly after after.
		k := after.Sub(from)/s.every + 1
		t = from.Add(k * s.every)
	case "cron":
		if w.start != nil && w.start.After(after) {
			t = *w.start
		} else {
			t = s.cron.next(after, loc)
		}
	}
	if t.IsZero() || s.kind != "at" && w.end != nil && t.After(*w.end) {
		return time.Time{}
	}
	return t.UTC()
}

// cronExpr is a cron expression in the form Application Auto Scaling takes: "The cron format consists of six
// fields separated by white spaces: [Minutes] [Hours] [Day_of_Month] [Month] [Day_of_Week] [Year]." (API
// reference, PutScheduledAction), with the syntax of the Cron expressions reference (Amazon EventBridge user
// guide) that the Application Auto Scaling user guide points to:
//
//	Field         Values           Wildcards
//	Minutes       0-59             , - * /
//	Hours         0-23             , - * /
//	Day-of-month  1-31             , - * ? / L W
//	Month         1-12 or JAN-DEC  , - * /
//	Day-of-week   1-7 or SUN-SAT   , - * ? L #
//	Year          1970-2199        , - * /
type cronExpr struct {
	minutes, hours, months, years []bool
	// dom is nil for "?"; else the days of the month, with lastDay ("L"), lastWeekday ("LW") and nearest
	// ("3W": "the weekday closest to the third day of the month").
	dom         []bool
	lastDay     bool
	lastWeekday bool
	nearest     []int
	// dow is nil for "?"; else the days of the week, 1 (SUN) to 7 (SAT), with lastOf ("5L": the last Thursday
	// of the month) and nth ("3#2": "the second Tuesday of the month").
	dow    []bool
	lastOf []int
	nth    [2]int
}

var (
	monthNames = []string{"JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"}
	dayNames   = []string{"SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"}
)

func parseCron(body string) (*cronExpr, error) {
	f := strings.Fields(body)
	if len(f) != 6 {
		return nil, fmt.Errorf("a cron expression has six fields separated by white spaces, [Minutes] [Hours] [Day_of_Month] [Month] [Day_of_Week] [Year]: %q has %d", body, len(f))
	}
	c := &cronExpr{}
	var err error
	if c.minutes, err = cronField("Minutes", f[0], 0, 59, nil); err != nil {
		return nil, err
	}
	if c.hours, err = cronField("Hours", f[1], 0, 23, nil); err != nil {
		return nil, err
	}
	if c.months, err = cronField("Month", f[3], 1, 12, monthNames); err != nil {
		return nil, err
	}
	if c.years, err = cronField("Year", f[5], 1970, 2199, nil); err != nil {
		return nil, err
	}
	// "You can't specify the Day-of-month and Day-of-week fields in the same cron expression. If you specify a
	// value or a * (asterisk) in one of the fields, you must use a ? (question mark) in the other."
	// (Restrictions, Cron expressions reference.)
	if (f[2] == "?") == (f[4] == "?") {
		return nil, fmt.Errorf("use ? in exactly one of Day-of-month and Day-of-week: you can't specify both fields in the same cron expression (%q, %q)", f[2], f[4])
	}
	if f[2] != "?" {
		if err := c.parseDOM(f[2]); err != nil {
			return nil, err
		}
	}
	if f[4] != "?" {
		if err := c.parseDOW(f[4]); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// parseDOM reads the Day-of-month field: the common syntax plus L (the last day), LW (the last weekday) and
// nW (the weekday closest to day n).
func (c *cronExpr) parseDOM(s string) error {
	var plain []string
	for _, item := range strings.Split(s, ",") {
		switch {
		case item == "L":
			c.lastDay = true
		case item == "LW":
			c.lastWeekday = true
		case strings.HasSuffix(item, "W"):
			n, err := strconv.Atoi(strings.TrimSuffix(item, "W"))
			if err != nil || n < 1 || n > 31 {
				return fmt.Errorf("in Day-of-month, %q: W follows a day of the month, 1-31", item)
			}
			c.nearest = append(c.nearest, n)
		default:
			plain = append(plain, item)
		}
	}
	c.dom = make([]bool, 32)
	if len(plain) > 0 {
		set, err := cronField("Day-of-month", strings.Join(plain, ","), 1, 31, nil)
		if err != nil {
			return err
		}
		c.dom = set
	}
	return nil
}

// parseDOW reads the Day-of-week field: the common syntax plus L (the last day of the week, SAT), nL (the
// last day n of the month) and n#k (the k-th day n of the month). "If you use the '#' character, you can
// define only one expression in the day-of-week field. For example, "3#1,6#3" is not valid because it is
// interpreted as two expressions."
func (c *cronExpr) parseDOW(s string) error {
	items := strings.Split(s, ",")
	var plain []string
	for _, item := range items {
		switch {
		case strings.Contains(item, "#"):
			if len(items) > 1 {
				return fmt.Errorf("in Day-of-week, %q: with the # character the field holds only one expression", s)
			}
			d, k, _ := strings.Cut(item, "#")
			day, err := cronValue(d, 1, 7, dayNames)
			n, err2 := strconv.Atoi(k)
			if err != nil || err2 != nil || n < 1 || n > 5 {
				return fmt.Errorf("in Day-of-week, %q: n#k names day n (1-7 or SUN-SAT) and its instance k (1-5) in the month", item)
			}
			c.nth = [2]int{day, n}
		case item == "L":
			plain = append(plain, "7")
		case strings.HasSuffix(item, "L"):
			day, err := cronValue(strings.TrimSuffix(item, "L"), 1, 7, dayNames)
			if err != nil {
				return fmt.Errorf("in Day-of-week, %q: L follows a day of the week, 1-7 or SUN-SAT", item)
			}
			c.lastOf = append(c.lastOf, day)
		default:
			plain = append(plain, item)
		}
	}
	c.dow = make([]bool, 8)
	if len(plain) > 0 {
		set, err := cronField("Day-of-week", strings.Join(plain, ","), 1, 7, dayNames)
		if err != nil {
			return err
		}
		c.dow = set
	}
	return nil
}

// cronField reads a field of the common syntax: comma-separated items, each *, a value, a range a-b, or either
// with an increment /n ("In the Minutes field, you could enter 1/10 to specify every tenth minute, starting
// from the first minute of the hour"). names, when given, are the values' names from lo on (JAN-DEC,
// SUN-SAT). The set has one entry per value, indexed by the value.
func cronField(field, s string, lo, hi int, names []string) ([]bool, error) {
	set := make([]bool, hi+1)
	for _, item := range strings.Split(s, ",") {
		rng, inc, hasInc := strings.Cut(item, "/")
		step := 1
		if hasInc {
			n, err := strconv.Atoi(inc)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("in %s, %q: the increment after / is a positive integer", field, item)
			}
			step = n
		}
		from, to := lo, hi
		switch {
		case rng == "*":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if from, err = cronValue(a, lo, hi, names); err != nil {
				return nil, fmt.Errorf("in %s, %q: %v", field, item, err)
			}
			if to, err = cronValue(b, lo, hi, names); err != nil {
				return nil, fmt.Errorf("in %s, %q: %v", field, item, err)
			}
			if to < from {
				return nil, fmt.Errorf("in %s, %q: the range ends before it starts", field, item)
			}
		default:
			v, err := cronValue(rng, lo, hi, names)
			if err != nil {
				return nil, fmt.Errorf("in %s, %q: %v", field, item, err)
			}
			from = v
			if !hasInc {
				to = v
			}
		}
		for v := from; v <= to; v += step {
			set[v] = true
		}
	}
	return set, nil
}

// cronValue reads one value of a field: a number in [lo, hi] or, where the field has them, a name.
func cronValue(s string, lo, hi int, names []string) (int, error) {
	if i := slices.Index(names, strings.ToUpper(s)); i >= 0 && s != "" {
		return lo + i, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		if names != nil {
			return 0, fmt.Errorf("%q is not a value %d-%d or %s-%s", s, lo, hi, names[0], names[len(names)-1])
		}
		return 0, fmt.Errorf("%q is not a value %d-%d", s, lo, hi)
	}
	return n, nil
}

// next is the expression's first instant strictly after after, in location loc (zero when there is none before
// the end of 2199). Each local day is matched once and its hours and minutes tried in order, so a local time
// that a daylight-saving change skips runs at the time it normalizes to: "If you specify a time zone that
// observes daylight saving time, the action automatically adjusts for Daylight Saving Time (DST)." (How
// scheduled scaling for Application Auto Scaling works.)
func (c *cronExpr) next(after time.Time, loc *time.Location) time.Time {
	local := after.In(loc)
	day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
	for day.Year() <= 2199 {
		y, m, d := day.Date()
		switch {
		case !c.years[y]:
			day = time.Date(y+1, 1, 1, 0, 0, 0, 0, time.UTC)
			continue
		case !c.months[m]:
			day = time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC)
			continue
		}
		if c.dayMatches(y, m, d) {
			for h := 0; h < 24; h++ {
				if !c.hours[h] {
					continue
				}
				for mi := 0; mi < 60; mi++ {
					if !c.minutes[mi] {
						continue
					}
					if t := localTime(y, m, d, h, mi, loc); t.After(after) {
						return t
					}
				}
			}
		}
		day = day.AddDate(0, 0, 1)
	}
	return time.Time{}
}

// localTime is the instant of a local date and time in loc. A local time that a daylight-saving change skips
// is moved later by the length of the gap (02:30 on the day New York skips 02:00-03:00 is 03:30 EDT), as
// java.time resolves one; time.Date leaves the choice open.
func localTime(y int, m time.Month, d, h, mi int, loc *time.Location) time.Time {
	t := time.Date(y, m, d, h, mi, 0, 0, loc)
	if l := t.In(loc); l.Hour() == h && l.Minute() == mi {
		return t
	}
	_, before := time.Date(y, m, d, 0, 0, 0, 0, loc).Add(-12 * time.Hour).Zone()
	return time.Date(y, m, d, h, mi, 0, 0, time.FixedZone("", before)).In(loc)
}

// dayMatches reports whether the day d of month m of year y is one of the expression's days.
func (c *cronExpr) dayMatches(y int, m time.Month, d int) bool {
	last := time.Date(y, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
	wd := int(time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Weekday()) // 0 = Sunday
	if c.dom != nil {
		if c.dom[d] || c.lastDay && d == last || c.lastWeekday && d == nearestWeekday(y, m, last, last) {
			return true
		}
		for _, n := range c.nearest {
			if n <= last && d == nearestWeekday(y, m, n, last) {
				return true
			}
		}
		return false
	}
	if c.dow[wd+1] {
		return true
	}
	for _, n := range c.lastOf {
		if wd+1 == n && d+7 > last {
			return true
		}
	}
	return c.nth[0] != 0 && wd+1 == c.nth[0] && (d-1)/7+1 == c.nth[1]
}

// nearestWeekday is the weekday (Monday to Friday) closest to day n of the month, within the month.
func nearestWeekday(y int, m time.Month, n, last int) int {
	switch time.Date(y, m, n, 0, 0, 0, 0, time.UTC).Weekday() {
	case time.Saturday:
		if n == 1 {
			return 3
		}
		return n - 1
	case time.Sunday:
		if n == last {
			return n - 2
		}
		return n + 1
	}
	return n
}
