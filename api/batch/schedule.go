package batch

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Schedule is a parsed five-field cron schedule (CronJob's spec.schedule;
// the API server validates with the same parser the controller runs): minute, hour, day of
// month, month, day of week, as a set of allowed values per field.
type Schedule struct {
	minute, hour, dom, month, dow uint64 // bit i set: value i allowed
	domStar, dowStar              bool   // "*" (then the other day field alone decides)
}

var macros = map[string]string{
	"@yearly": "0 0 1 1 *", "@annually": "0 0 1 1 *", "@monthly": "0 0 1 * *",
	"@weekly": "0 0 * * 0", "@daily": "0 0 * * *", "@midnight": "0 0 * * *", "@hourly": "0 * * * *",
}

var monthNames = map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}
var dayNames = map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}

// ParseSchedule reads the standard cron syntax: each field is *, a number,
// a range a-b, a list a,b,c, any of them with a step /n; months and days
// may be named (jan, mon); day of week 7 is Sunday too; and the macros
// @yearly, @monthly, @weekly, @daily, @hourly. The error names the field.
func ParseSchedule(spec string) (*Schedule, error) {
	if m, ok := macros[strings.TrimSpace(spec)]; ok {
		spec = m
	}
	fields := strings.Fields(spec)
	if len(fields) != 5 {
		return nil, fmt.Errorf("expected 5 fields (minute hour day-of-month month day-of-week), found %d in %q", len(fields), spec)
	}
	s := &Schedule{domStar: fields[2] == "*" || fields[2] == "?", dowStar: fields[4] == "*" || fields[4] == "?"}
	var err error
	for _, f := range []struct {
		name    string
		text    string
		lo, hi  int
		names   map[string]int
		into    *uint64
		sunday7 bool
	}{
		{"minute", fields[0], 0, 59, nil, &s.minute, false},
		{"hour", fields[1], 0, 23, nil, &s.hour, false},
		{"day of month", fields[2], 1, 31, nil, &s.dom, false},
		{"month", fields[3], 1, 12, monthNames, &s.month, false},
		{"day of week", fields[4], 0, 7, dayNames, &s.dow, true},
	} {
		if *f.into, err = parseField(f.text, f.lo, f.hi, f.names); err != nil {
			return nil, fmt.Errorf("%s %q: %w", f.name, f.text, err)
		}
		if f.sunday7 && *f.into&(1<<7) != 0 {
			*f.into |= 1 // 7 is Sunday
		}
	}
	return s, nil
}

func parseField(text string, lo, hi int, names map[string]int) (uint64, error) {
	var bits uint64
	for _, part := range strings.Split(text, ",") {
		rng, stepText, hasStep := strings.Cut(part, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n <= 0 {
				return 0, fmt.Errorf("step %q must be a positive number", stepText)
			}
			step = n
		}
		first, last := lo, hi
		switch {
		case rng == "*" || rng == "?":
		case strings.Contains(rng, "-"):
			a, b, _ := strings.Cut(rng, "-")
			var err error
			if first, err = value(a, lo, hi, names); err != nil {
				return 0, err
			}
			if last, err = value(b, lo, hi, names); err != nil {
				return 0, err
			}
			if first > last {
				return 0, fmt.Errorf("range %s runs backwards", rng)
			}
		default:
			v, err := value(rng, lo, hi, names)
			if err != nil {
				return 0, err
			}
			first, last = v, v
			if hasStep {
				last = hi
			}
		}
		for v := first; v <= last; v += step {
			bits |= 1 << v
			if step > last-v {
				break // the next value is past the end (and v+step could overflow)
			}
		}
	}
	return bits, nil
}

func value(s string, lo, hi int, names map[string]int) (int, error) {
	if v, ok := names[strings.ToLower(s)]; ok {
		return v, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v < lo || v > hi {
		return 0, fmt.Errorf("%d is outside %d-%d", v, lo, hi)
	}
	return v, nil
}

// Next returns the first scheduled time strictly after t (at a whole
// minute), or the zero time if there is none within five years.
func (s *Schedule) Next(t time.Time) time.Time {
	t = t.Truncate(time.Minute).Add(time.Minute)
	limit := t.AddDate(5, 0, 0)
	for t.Before(limit) {
		if s.month&(1<<uint(t.Month())) == 0 {
			t = time.Date(t.Year(), t.Month()+1, 1, 0, 0, 0, 0, t.Location())
			continue
		}
		if !s.dayMatches(t) {
			t = time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, t.Location())
			continue
		}
		if s.hour&(1<<uint(t.Hour())) == 0 {
			t = time.Date(t.Year(), t.Month(), t.Day(), t.Hour()+1, 0, 0, 0, t.Location())
			continue
		}
		if s.minute&(1<<uint(t.Minute())) == 0 {
			t = t.Add(time.Minute)
			continue
		}
		return t
	}
	return time.Time{}
}

// dayMatches follows cron: with both day fields restricted, either may match.
func (s *Schedule) dayMatches(t time.Time) bool {
	dom := s.dom&(1<<uint(t.Day())) != 0
	dow := s.dow&(1<<uint(t.Weekday())) != 0
	switch {
	case s.domStar && s.dowStar:
		return true
	case s.domStar:
		return dow
	case s.dowStar:
		return dom
	}
	return dom || dow
}
