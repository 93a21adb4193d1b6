package meta

import (
	"time"

	"github.com/kobune/kobune/api/internal/jsonstr"
)

// Time is a timestamp that serializes as RFC 3339 with second precision, as
// Kubernetes' metav1.Time does.
type Time struct {
	time.Time
}

// Now returns the current time truncated to seconds.
func Now() Time { return Time{time.Now().UTC().Truncate(time.Second)} }

// NewTime wraps t.
func NewTime(t time.Time) Time { return Time{t.UTC().Truncate(time.Second)} }

// MarshalJSON writes the RFC 3339 form, or null for the zero time.
func (t Time) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return jsonstr.Quote(t.UTC().Format(time.RFC3339)), nil
}

// UnmarshalJSON reads RFC 3339 or null.
func (t *Time) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	s, err := jsonstr.Unquote(b)
	if err != nil {
		return err
	}
	p, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return err
	}
	t.Time = p.UTC()
	return nil
}

// MicroTime is a timestamp with microsecond precision (Lease and Event times).
type MicroTime struct {
	time.Time
}

// NowMicro returns the current time truncated to microseconds.
func NowMicro() MicroTime { return MicroTime{time.Now().UTC().Truncate(time.Microsecond)} }

// MarshalJSON writes RFC 3339 with six fractional digits, or null.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return jsonstr.Quote(t.UTC().Format("2006-01-02T15:04:05.000000Z07:00")), nil
}

// UnmarshalJSON reads RFC 3339 (with or without fractions) or null.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		t.Time = time.Time{}
		return nil
	}
	s, err := jsonstr.Unquote(b)
	if err != nil {
		return err
	}
	p, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return err
	}
	t.Time = p.UTC()
	return nil
}
