package resource

import (
	"encoding/json"
	"math/big"
	"testing"
)

func TestParseAndCanonical(t *testing.T) {
	tests := []struct {
		in    string
		want  string
		milli int64
	}{
		{"500m", "500m", 500},
		{"1", "1", 1000},
		{"0.5", "500m", 500},
		{"1.5", "1500m", 1500},
		{"1000m", "1", 1000},
		{"1000", "1k", 1_000_000},
		{"512Mi", "512Mi", 512 << 20 * 1000},
		{"1Gi", "1Gi", 1 << 30 * 1000},
		{"1024Mi", "1Gi", 1 << 30 * 1000},
		{"0.5Gi", "512Mi", 512 << 20 * 1000},
		{"1536Mi", "1536Mi", 1536 << 20 * 1000},
		{"1e3", "1e3", 1_000_000},
		{"1.5e3", "1500", 1_500_000},
		{"100n", "100n", 1},
		{"0", "0", 0},
		{"-2", "-2", -2000},
		{"0.0001", "100u", 1},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			q, err := ParseQuantity(tt.in)
			if err != nil {
				t.Fatalf("ParseQuantity(%q): %v", tt.in, err)
			}
			if got := q.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if got := q.MilliValue(); got != tt.milli {
				t.Errorf("MilliValue() = %d, want %d", got, tt.milli)
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	for _, in := range []string{"", "abc", "1.2.3", "5Xi", "m", "1e", "--1", "."} {
		if _, err := ParseQuantity(in); err == nil {
			t.Errorf("ParseQuantity(%q) succeeded, want error", in)
		}
	}
}

func TestExactArithmetic(t *testing.T) {
	// 0.1 added ten times is exactly 1, unlike float64.
	sum := Quantity{}
	for range 10 {
		sum = sum.Add(MustParse("100m"))
	}
	if !sum.Equal(MustParse("1")) {
		t.Errorf("10 × 100m = %s, want 1", sum)
	}
	left := MustParse("1Gi").Sub(MustParse("512Mi"))
	if left.String() != "512Mi" {
		t.Errorf("1Gi − 512Mi = %s, want 512Mi", left)
	}
	if MustParse("1Gi").Cmp(MustParse("1000Mi")) <= 0 {
		t.Errorf("1Gi should be greater than 1000Mi")
	}
	if MustParse("1500m").Value() != 2 {
		t.Errorf("1500m.Value() should round up to 2")
	}
}

func TestJSON(t *testing.T) {
	var l List
	if err := json.Unmarshal([]byte(`{"cpu": 1, "memory": "1024Mi", "pods": "110"}`), &l); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := string(b), `{"cpu":"1","memory":"1Gi","pods":"110"}`; got != want {
		t.Errorf("round trip = %s, want %s", got, want)
	}
}

// TestFastPathsAgreeWithExactPath checks the int64 fast paths of parsing and
// printing against the big.Int path on many generated quantities.
func TestFastPathsAgreeWithExactPath(t *testing.T) {
	suffixes := []string{"", "m", "k", "M", "G", "n", "u", "Ki", "Mi", "Gi", "Ti"}
	nums := []string{"0", "1", "7", "10", "100", "512", "1000", "1024", "1536", "0.5", "0.25", "2.125", "999999", "123456789", "-3", "-0.5"}
	for _, n := range nums {
		for _, s := range suffixes {
			in := n + s
			fast, ok := parseSmall(n, s)
			if !ok {
				continue
			}
			mant, scale, err := parseDecimal(n)
			if err != nil {
				t.Fatal(err)
			}
			exact := new(big.Int).Mul(mant, bigNano)
			if p := binSuffix[s]; p > 0 {
				exact.Mul(exact, new(big.Int).Exp(big1024, big.NewInt(int64(p)), nil))
			} else {
				scale -= decSuffix[s]
			}
			exact = shift(exact, -scale)
			if fast.nano.Cmp(exact) != 0 {
				t.Errorf("%s: fast %s, exact %s", in, fast.nano, exact)
			}
			if got, want := smallString(exact.Int64(), fast.Format), bigString(exact, fast.Format); got != want {
				t.Errorf("%s: int64 printer %q, big.Int printer %q", in, got, want)
			}
		}
	}
}
