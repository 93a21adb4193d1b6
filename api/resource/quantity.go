package resource

import (
	"fmt"
	"math/big"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/internal/jsonstr"
)

// Format is the suffix family a quantity was written in and prints in.
type Format string

// The three suffix families.
const (
	DecimalSI       Format = "DecimalSI"       // m, k, M, G ...
	BinarySI        Format = "BinarySI"        // Ki, Mi, Gi ...
	DecimalExponent Format = "DecimalExponent" // e3, E6 ...
)

// Quantity is an exact fixed-point number with a suffix family.
type Quantity struct {
	nano   *big.Int // value × 10^9; nil means zero
	Format Format
}

var (
	bigNano    = big.NewInt(1_000_000_000)
	bigTen     = big.NewInt(10)
	bigOne     = big.NewInt(1)
	big1024    = big.NewInt(1024)
	decSuffix  = map[string]int{"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	binSuffix  = map[string]int{"Ki": 1, "Mi": 2, "Gi": 3, "Ti": 4, "Pi": 5, "Ei": 6}
	decByExp   = map[int]string{-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
	binByPower = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
)

// ParseQuantity parses a quantity such as "500m", "0.5", "512Mi" or "1e3".
func ParseQuantity(s string) (Quantity, error) {
	if s == "" {
		return Quantity{}, fmt.Errorf("quantity is empty")
	}
	num, suffix := splitNumber(s)
	if num == "" || num == "+" || num == "-" || num == "." {
		return Quantity{}, fmt.Errorf("quantity %q: must be a number with an optional suffix such as m, Mi, Gi or e3", s)
	}
	if q, ok := parseSmall(num, suffix); ok {
		return q, nil
	}
	mant, scale, err := parseDecimal(num)
	if err != nil {
		return Quantity{}, fmt.Errorf("quantity %q: %w", s, err)
	}
	// value = mant × 10^-scale; nano = value × 10^9 × suffixFactor
	nano := new(big.Int).Mul(mant, bigNano)
	var format Format
	switch {
	case binSuffix[suffix] > 0:
		format = BinarySI
		nano.Mul(nano, new(big.Int).Exp(big1024, big.NewInt(int64(binSuffix[suffix])), nil))
	case isExponent(suffix):
		format = DecimalExponent
		e, err := strconv.Atoi(suffix[1:])
		if err != nil || e > 30 || e < -30 {
			return Quantity{}, fmt.Errorf("quantity %q: exponent out of range", s)
		}
		scale -= e
	default:
		e, ok := decSuffix[suffix]
		if !ok {
			return Quantity{}, fmt.Errorf("quantity %q: unknown suffix %q (use n, u, m, k, M, G, T, P, E, Ki, Mi, Gi, Ti, Pi, Ei or eN)", s, suffix)
		}
		format = DecimalSI
		scale -= e
	}
	nano = shift(nano, -scale)
	return Quantity{nano: nano, Format: format}, nil
}

// MustParse parses s and panics on error; for constants in code and tests.
func MustParse(s string) Quantity {
	q, err := ParseQuantity(s)
	if err != nil {
		panic(err)
	}
	return q
}

// NewQuantity returns value in the given format.
func NewQuantity(value int64, f Format) Quantity {
	return Quantity{nano: new(big.Int).Mul(big.NewInt(value), bigNano), Format: f}
}

// NewMilliQuantity returns milli/1000 in the given format.
func NewMilliQuantity(milli int64, f Format) Quantity {
	return Quantity{nano: new(big.Int).Mul(big.NewInt(milli), big.NewInt(1_000_000)), Format: f}
}

// NewNanoQuantity returns nano/10⁹ in the given format (a CPU rate in
// nano-cores prints as "2412683n", as metrics-server's do).
func NewNanoQuantity(nano int64, f Format) Quantity {
	return Quantity{nano: big.NewInt(nano), Format: f}
}

func splitNumber(s string) (num, suffix string) {
	i := 0
	if i < len(s) && (s[i] == '+' || s[i] == '-') {
		i++
	}
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	return s[:i], s[i:]
}

func isExponent(suffix string) bool {
	if len(suffix) < 2 || (suffix[0] != 'e' && suffix[0] != 'E') {
		return false
	}
	rest := suffix[1:]
	if rest[0] == '+' || rest[0] == '-' {
		rest = rest[1:]
	}
	if rest == "" {
		return false
	}
	for _, c := range rest {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseDecimal returns mant and scale with num = mant × 10^-scale.
func parseDecimal(num string) (*big.Int, int, error) {
	neg := false
	if num[0] == '+' || num[0] == '-' {
		neg = num[0] == '-'
		num = num[1:]
	}
	intPart, frac, hasDot := strings.Cut(num, ".")
	if strings.Contains(frac, ".") || (hasDot && intPart == "" && frac == "") {
		return nil, 0, fmt.Errorf("malformed number")
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	if len(digits) > 60 {
		return nil, 0, fmt.Errorf("too many digits")
	}
	mant := new(big.Int)
	if digits != "" {
		mant.SetString(digits, 10)
	}
	if neg {
		mant.Neg(mant)
	}
	return mant, len(frac), nil
}

// shift multiplies v by 10^n, rounding up (away from zero) when n < 0 drops digits.
func shift(v *big.Int, n int) *big.Int {
	p := new(big.Int).Exp(bigTen, big.NewInt(int64(abs(n))), nil)
	if n >= 0 {
		return v.Mul(v, p)
	}
	q, r := new(big.Int).QuoRem(v, p, new(big.Int))
	if r.Sign() > 0 {
		q.Add(q, bigOne)
	} else if r.Sign() < 0 {
		q.Sub(q, bigOne)
	}
	return q
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func (q Quantity) val() *big.Int {
	if q.nano == nil {
		return new(big.Int)
	}
	return q.nano
}

// IsZero reports whether the quantity is zero.
func (q Quantity) IsZero() bool { return q.nano == nil || q.nano.Sign() == 0 }

// Sign returns -1, 0 or +1.
func (q Quantity) Sign() int { return q.val().Sign() }

// Cmp compares q with o: -1, 0 or +1.
func (q Quantity) Cmp(o Quantity) int { return q.val().Cmp(o.val()) }

// Equal reports whether q and o are the same number.
func (q Quantity) Equal(o Quantity) bool { return q.Cmp(o) == 0 }

// Add returns q+o exactly, in q's format (o's if q has none or is zero:
// 0 + 100Mi is 100Mi).
func (q Quantity) Add(o Quantity) Quantity {
	return Quantity{nano: new(big.Int).Add(q.val(), o.val()), Format: q.pickFormat(o)}
}

// Sub returns q−o exactly.
func (q Quantity) Sub(o Quantity) Quantity {
	return Quantity{nano: new(big.Int).Sub(q.val(), o.val()), Format: q.pickFormat(o)}
}

func (q Quantity) pickFormat(o Quantity) Format {
	if q.Format != "" && (!q.IsZero() || o.Format == "") {
		return q.Format
	}
	return o.Format
}

// Copy returns an independent copy (the big.Int is not shared).
func (q Quantity) Copy() Quantity {
	if q.nano == nil {
		return Quantity{Format: q.Format}
	}
	return Quantity{nano: new(big.Int).Set(q.nano), Format: q.Format}
}

// MaxMilliValue is the largest quantity the API accepts, in milli-units:
// the scheduler and the agent compare cpu in millicores and memory in
// bytes as int64, so a larger value would wrap around (9223372036854775807m,
// about 9.2e15 cores or 8 PiB).
const MaxMilliValue = 1<<63 - 1

// TooLarge reports whether the quantity's magnitude, in milli-units, does
// not fit in an int64 (MilliValue would wrap around).
func (q Quantity) TooLarge() bool {
	milli := new(big.Int).Abs(q.val())
	milli.Quo(milli, big.NewInt(1_000_000))
	return !milli.IsInt64()
}

// MilliValue returns the value × 1000, rounded up.
func (q Quantity) MilliValue() int64 { return ceilDiv(q.val(), big.NewInt(1_000_000)) }

// Value returns the value rounded up to an integer (bytes for memory).
func (q Quantity) Value() int64 { return ceilDiv(q.val(), bigNano) }

func ceilDiv(v, d *big.Int) int64 {
	qt, r := new(big.Int).QuoRem(v, d, new(big.Int))
	if r.Sign() > 0 {
		qt.Add(qt, bigOne)
	}
	return qt.Int64()
}

// String prints the canonical form.
func (q Quantity) String() string {
	v := q.val()
	if v.Sign() == 0 {
		return "0"
	}
	if v.IsInt64() {
		return smallString(v.Int64(), q.Format)
	}
	return bigString(v, q.Format)
}

// bigString is String for any value, with big.Int arithmetic.
func bigString(v *big.Int, f Format) string {
	if f == BinarySI {
		if s, ok := binaryString(v); ok {
			return s
		}
	}
	// Largest power of ten (multiple of 3, from nano up to exa) dividing v.
	exp := -9
	m := new(big.Int).Set(v)
	r := new(big.Int)
	thousand := big.NewInt(1000)
	for exp < 18 {
		qt, rem := new(big.Int).QuoRem(m, thousand, r)
		if rem.Sign() != 0 {
			break
		}
		m = qt
		exp += 3
	}
	if f == DecimalExponent {
		if exp == 0 {
			return m.String()
		}
		return fmt.Sprintf("%se%d", m.String(), exp)
	}
	return m.String() + decByExp[exp]
}

// binaryString prints an integer value with the largest 1024-power suffix
// that divides it; values under 1Ki or fractional fall back to decimal.
func binaryString(v *big.Int) (string, bool) {
	whole, r := new(big.Int).QuoRem(v, bigNano, new(big.Int))
	if r.Sign() != 0 {
		return "", false
	}
	power := 0
	for power < 6 {
		qt, rem := new(big.Int).QuoRem(whole, big1024, new(big.Int))
		if rem.Sign() != 0 || qt.Sign() == 0 {
			break
		}
		whole = qt
		power++
	}
	if power == 0 {
		return "", false
	}
	return whole.String() + binByPower[power], true
}

// MarshalJSON writes the canonical string.
func (q Quantity) MarshalJSON() ([]byte, error) { return jsonstr.Quote(q.String()), nil }

// UnmarshalJSON accepts a string ("500m") or a bare JSON number (1, 0.5).
func (q *Quantity) UnmarshalJSON(b []byte) error {
	s := string(b)
	if s == "null" {
		*q = Quantity{}
		return nil
	}
	if len(b) > 0 && b[0] == '"' {
		var err error
		if s, err = jsonstr.Unquote(b); err != nil {
			return err
		}
	}
	p, err := ParseQuantity(strings.TrimSpace(s))
	if err != nil {
		return err
	}
	*q = p
	return nil
}

// parseSmall is the allocation-light path for the common case: a plain
// decimal with at most 18 significant digits and a decimal or binary suffix,
// whose value in nano-units fits in an int64. It reports false for anything
// else, which then takes the exact big.Int path.
func parseSmall(num, suffix string) (Quantity, bool) {
	neg := false
	if num != "" && (num[0] == '+' || num[0] == '-') {
		neg, num = num[0] == '-', num[1:]
	}
	intPart, frac, _ := strings.Cut(num, ".")
	if len(intPart)+len(frac) > 18 || strings.Contains(frac, ".") || intPart+frac == "" {
		return Quantity{}, false
	}
	var mant int64
	for _, c := range intPart + frac {
		if c < '0' || c > '9' {
			return Quantity{}, false
		}
		mant = mant*10 + int64(c-'0')
	}
	format := DecimalSI
	exp10 := 9 - len(frac) // value × 10^9 = mant × 10^(9−len(frac)) × suffix
	mult := int64(1)
	if p, ok := binSuffix[suffix]; ok {
		format = BinarySI
		mult = 1 << (10 * p)
	} else if e, ok := decSuffix[suffix]; ok {
		exp10 += e
	} else {
		return Quantity{}, false
	}
	v, ok := mulCheck(mant, mult)
	for ; ok && exp10 > 0; exp10-- {
		v, ok = mulCheck(v, 10)
	}
	if !ok || exp10 < 0 {
		return Quantity{}, false // overflow, or finer than a nano-unit: exact path
	}
	if neg {
		v = -v
	}
	return Quantity{nano: big.NewInt(v), Format: format}, true
}

func mulCheck(a, b int64) (int64, bool) {
	if a == 0 || b == 0 {
		return 0, true
	}
	c := a * b
	if c/b != a || c < 0 {
		return 0, false
	}
	return c, true
}

var decExps = []int{-9, -6, -3, 0, 3, 6, 9, 12, 15, 18}

// smallString is String for values whose nano count fits in an int64.
func smallString(nano int64, f Format) string {
	if f == BinarySI && nano%1_000_000_000 == 0 {
		whole, power := nano/1_000_000_000, 0
		for power < 6 && whole%1024 == 0 && whole/1024 != 0 {
			whole /= 1024
			power++
		}
		if power > 0 {
			return strconv.FormatInt(whole, 10) + binByPower[power]
		}
	}
	m, exp := nano, -9
	for exp < 18 && m%1000 == 0 {
		m /= 1000
		exp += 3
	}
	if f == DecimalExponent {
		if exp == 0 {
			return strconv.FormatInt(m, 10)
		}
		return strconv.FormatInt(m, 10) + "e" + strconv.Itoa(exp)
	}
	return strconv.FormatInt(m, 10) + decByExp[exp]
}
