package meta

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/internal/jsonstr"
)

// IntOrString holds either an integer or a string, such as a port number or
// name, or a count or percentage ("25%"). JSON shape: a bare number or string.
type IntOrString struct {
	IsString bool
	IntVal   int32
	StrVal   string
}

// FromInt returns an IntOrString holding i.
func FromInt(i int32) IntOrString { return IntOrString{IntVal: i} }

// FromString returns an IntOrString holding s.
func FromString(s string) IntOrString { return IntOrString{IsString: true, StrVal: s} }

// String prints the value as it appears in a manifest.
func (v IntOrString) String() string {
	if v.IsString {
		return v.StrVal
	}
	return strconv.Itoa(int(v.IntVal))
}

// MarshalJSON writes a number or a string.
func (v IntOrString) MarshalJSON() ([]byte, error) {
	if v.IsString {
		return jsonstr.Quote(v.StrVal), nil
	}
	return strconv.AppendInt(nil, int64(v.IntVal), 10), nil
}

// UnmarshalJSON reads a number or a string.
func (v *IntOrString) UnmarshalJSON(b []byte) error {
	if len(b) > 0 && b[0] == '"' {
		v.IsString = true
		v.IntVal = 0
		s, err := jsonstr.Unquote(b)
		v.StrVal = s
		return err
	}
	v.IsString = false
	v.StrVal = ""
	if n, err := strconv.ParseInt(string(b), 10, 32); err == nil {
		v.IntVal = int32(n)
		return nil
	}
	return json.Unmarshal(b, &v.IntVal) // encoding/json's own error (or null)
}

// ScaledValue resolves v against total: an integer is returned as is, a
// percentage "N%" becomes N% of total, rounded up or down as asked. This is
// how maxSurge (rounded up) and maxUnavailable (rounded down) are computed.
func (v IntOrString) ScaledValue(total int, roundUp bool) (int, error) {
	if !v.IsString {
		return int(v.IntVal), nil
	}
	s, ok := strings.CutSuffix(v.StrVal, "%")
	if !ok {
		return 0, fmt.Errorf("invalid value %q: must be an integer or a percentage", v.StrVal)
	}
	p, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("invalid percentage %q", v.StrVal)
	}
	f := float64(p) * float64(total) / 100
	if roundUp {
		return int(math.Ceil(f)), nil
	}
	return int(math.Floor(f)), nil
}

// PercentError says what is wrong with a count or percentage ("" when it
// is fine): a count must not be negative, a percentage is digits and a
// '%' from 0% to 100%, in Kubernetes' words.
func (x IntOrString) PercentError() string {
	if !x.IsString {
		if x.IntVal < 0 {
			return "must be greater than or equal to 0"
		}
		return ""
	}
	n, ok := strings.CutSuffix(x.StrVal, "%")
	var pct int
	if _, err := fmt.Sscanf(n, "%d", &pct); !ok || err != nil || fmt.Sprint(pct) != n {
		return "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%', or '93%')"
	}
	if pct < 0 || pct > 100 {
		return "must not be greater than 100%"
	}
	return ""
}
