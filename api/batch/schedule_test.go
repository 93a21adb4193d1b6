package batch

import (
	"strings"
	"testing"
	"time"
)

func TestScheduleNext(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 7, 30, 0, time.UTC) // a Tuesday
	tests := []struct {
		spec string
		want string
	}{
		{"* * * * *", "2026-12-01 10:08"},
		{"*/15 * * * *", "2026-12-01 10:15"},
		{"5 * * * *", "2026-12-01 11:05"},
		{"0 9-17/4 * * *", "2026-12-01 13:00"},
		{"30 2 * * *", "2026-12-02 02:30"},
		{"0 0 1 * *", "2027-01-01 00:00"},
		{"0 0 * * sun", "2026-12-06 00:00"},
		{"0 0 * * 7", "2026-12-06 00:00"},
		{"0 12 * jan,jun mon-wed", "2027-01-04 12:00"},
		{"0 0 13 * fri", "2026-12-04 00:00"}, // either day field may match
		{"0 0 29 2 *", "2028-02-29 00:00"},
		{"@hourly", "2026-12-01 11:00"},
		{"@daily", "2026-12-02 00:00"},
		{"@weekly", "2026-12-06 00:00"},
		{"7,8,9 10 * * *", "2026-12-01 10:08"},
		{"1-3/2 * * * *", "2026-12-01 11:01"},
	}
	for _, tt := range tests {
		s, err := ParseSchedule(tt.spec)
		if err != nil {
			t.Errorf("%q: %v", tt.spec, err)
			continue
		}
		if got := s.Next(from).Format("2006-01-02 15:04"); got != tt.want {
			t.Errorf("%q after %s: %s, want %s", tt.spec, from.Format("2006-01-02 15:04"), got, tt.want)
		}
	}
}

func TestScheduleErrorsNameTheField(t *testing.T) {
	for spec, want := range map[string]string{
		"* * * *":       "expected 5 fields",
		"60 * * * *":    `minute "60": 60 is outside 0-59`,
		"* 24 * * *":    `hour "24"`,
		"* * 0 * *":     `day of month "0"`,
		"* * * 13 *":    `month "13"`,
		"* * * * 8":     `day of week "8"`,
		"*/0 * * * *":   `minute "*/0": step "0" must be a positive number`,
		"5-1 * * * *":   "range 5-1 runs backwards",
		"x * * * *":     `"x" is not a number`,
		"* * * * mon-x": `day of week "mon-x"`,
	} {
		if _, err := ParseSchedule(spec); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", spec, err, want)
		}
	}
}

// Issue #10 defect 8: a step near the int limit panicked kobune-controller
// (negative shift amount) on every restart.
func TestScheduleHugeStepsDoNotPanic(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 7, 30, 0, time.UTC)
	for spec, want := range map[string]string{
		"0 0 */9223372036854775807 * *":     "2027-01-01 00:00", // day 1 only
		"*/9223372036854775807 * * * *":     "2026-12-01 11:00",
		"0 0 1-31/9223372036854775807 * *":  "2027-01-01 00:00",
		"0 0 * * 1/9223372036854775807":     "2026-12-07 00:00",
		"59/9223372036854775806 23 * * *":   "2026-12-01 23:59",
		"0-59/4611686018427387904 0 * * *":  "2026-12-02 00:00",
		"0 0 31/4611686018427387904 12 sun": "2026-12-06 00:00",
	} {
		s, err := ParseSchedule(spec)
		if err != nil {
			t.Errorf("%q: %v", spec, err)
			continue
		}
		if got := s.Next(from).Format("2006-01-02 15:04"); got != want {
			t.Errorf("%q: next %s, want %s", spec, got, want)
		}
	}
	if _, err := ParseSchedule("0 0 */99999999999999999999 * *"); err == nil {
		t.Error("a step beyond int64 was accepted")
	}
}

// FuzzParseSchedule: no schedule text may crash the parser or Next.
func FuzzParseSchedule(f *testing.F) {
	for _, seed := range []string{"* * * * *", "0 0 */9223372036854775807 * *", "99 99 99 99 99", "@daily", "1-3/2 * * jan mon", "-1 * * * *", "*/-9223372036854775808 * * * *"} {
		f.Add(seed)
	}
	from := time.Date(2026, 12, 1, 10, 7, 30, 0, time.UTC)
	f.Fuzz(func(t *testing.T, spec string) {
		if s, err := ParseSchedule(spec); err == nil {
			s.Next(from)
		}
	})
}
