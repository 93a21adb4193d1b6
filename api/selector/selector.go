package selector

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/meta"
)

// Operator is a requirement's operator.
type Operator string

// The operators of the string form. Field selectors take only Equals and NotEquals.
const (
	Equals       Operator = "="
	NotEquals    Operator = "!="
	In           Operator = "in"
	NotIn        Operator = "notin"
	Exists       Operator = "exists"
	DoesNotExist Operator = "!"
)

// Requirement is one clause of a selector.
type Requirement struct {
	Key      string
	Operator Operator
	Values   []string // sorted
}

// Matches reports whether the label set satisfies the requirement.
func (r Requirement) Matches(set map[string]string) bool {
	v, has := set[r.Key]
	switch r.Operator {
	case Equals, In:
		return has && contains(r.Values, v)
	case NotEquals, NotIn:
		return !has || !contains(r.Values, v)
	case Exists:
		return has
	case DoesNotExist:
		return !has
	}
	return false
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// String prints the requirement in the string form.
func (r Requirement) String() string {
	switch r.Operator {
	case Exists:
		return r.Key
	case DoesNotExist:
		return "!" + r.Key
	case In, NotIn:
		return fmt.Sprintf("%s %s (%s)", r.Key, r.Operator, strings.Join(r.Values, ","))
	}
	return r.Key + string(r.Operator) + r.Values[0]
}

// Selector is a conjunction of requirements. The zero Selector matches
// everything; use Nothing() for one that matches nothing.
type Selector struct {
	Requirements []Requirement
	nothing      bool
}

// Everything matches every object.
func Everything() Selector { return Selector{} }

// Nothing matches no object (a nil LabelSelector).
func Nothing() Selector { return Selector{nothing: true} }

// Matches reports whether set satisfies every requirement.
func (s Selector) Matches(set map[string]string) bool {
	if s.nothing {
		return false
	}
	for _, r := range s.Requirements {
		if !r.Matches(set) {
			return false
		}
	}
	return true
}

// Empty reports whether the selector matches everything.
func (s Selector) Empty() bool { return !s.nothing && len(s.Requirements) == 0 }

// String prints the selector in the string form that Parse reads back.
func (s Selector) String() string {
	parts := make([]string, len(s.Requirements))
	for i, r := range s.Requirements {
		parts[i] = r.String()
	}
	return strings.Join(parts, ",")
}

// RequiresExactMatch returns the value a selector requires for key with an
// equality clause, if any (used to narrow field-selector watches).
func (s Selector) RequiresExactMatch(key string) (string, bool) {
	for _, r := range s.Requirements {
		if r.Key == key && (r.Operator == Equals || (r.Operator == In && len(r.Values) == 1)) {
			return r.Values[0], true
		}
	}
	return "", false
}

// FromLabelSelector converts the structured form. A nil selector matches
// nothing; an empty one matches everything.
func FromLabelSelector(ls *meta.LabelSelector) (Selector, error) {
	if ls == nil {
		return Nothing(), nil
	}
	var s Selector
	keys := make([]string, 0, len(ls.MatchLabels))
	for k := range ls.MatchLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		s.Requirements = append(s.Requirements, Requirement{Key: k, Operator: Equals, Values: []string{ls.MatchLabels[k]}})
	}
	for i, e := range ls.MatchExpressions {
		r := Requirement{Key: e.Key, Values: append([]string(nil), e.Values...)}
		sort.Strings(r.Values)
		switch e.Operator {
		case meta.LabelSelectorOpIn, meta.LabelSelectorOpNotIn:
			if len(e.Values) == 0 {
				return Selector{}, fmt.Errorf("matchExpressions[%d].values: must be non-empty for operator %s", i, e.Operator)
			}
			r.Operator = In
			if e.Operator == meta.LabelSelectorOpNotIn {
				r.Operator = NotIn
			}
		case meta.LabelSelectorOpExists, meta.LabelSelectorOpDoesNotExist:
			if len(e.Values) > 0 {
				return Selector{}, fmt.Errorf("matchExpressions[%d].values: must be empty for operator %s", i, e.Operator)
			}
			r.Operator = Exists
			if e.Operator == meta.LabelSelectorOpDoesNotExist {
				r.Operator = DoesNotExist
			}
		default:
			return Selector{}, fmt.Errorf("matchExpressions[%d].operator: %q is not a valid operator (In, NotIn, Exists, DoesNotExist)", i, e.Operator)
		}
		s.Requirements = append(s.Requirements, r)
	}
	return s, nil
}

// MustFromLabelSelector converts ls and panics on error; for selectors that
// validation has already accepted.
func MustFromLabelSelector(ls *meta.LabelSelector) Selector {
	s, err := FromLabelSelector(ls)
	if err != nil {
		panic(err)
	}
	return s
}

// SelectorFromSet returns the selector requiring every pair of set.
func SelectorFromSet(set map[string]string) Selector {
	s, _ := FromLabelSelector(&meta.LabelSelector{MatchLabels: set})
	return s
}

// ToLabelSelector is the structured form of a parsed label selector (what
// kubectl's --selector flags become in a generated object): equality
// clauses are matchLabels, != is NotIn, the others are matchExpressions.
// FromLabelSelector of the result selects the same label sets.
func ToLabelSelector(s Selector) *meta.LabelSelector {
	ls := &meta.LabelSelector{}
	for _, r := range s.Requirements {
		e := meta.LabelSelectorRequirement{Key: r.Key, Values: append([]string(nil), r.Values...)}
		switch r.Operator {
		case Equals:
			if _, twice := ls.MatchLabels[r.Key]; !twice {
				if ls.MatchLabels == nil {
					ls.MatchLabels = map[string]string{}
				}
				ls.MatchLabels[r.Key] = r.Values[0]
				continue
			}
			e.Operator = meta.LabelSelectorOpIn // a=1,a=2: both must hold
		case In:
			e.Operator = meta.LabelSelectorOpIn
		case NotEquals, NotIn:
			e.Operator = meta.LabelSelectorOpNotIn
		case Exists:
			e.Operator, e.Values = meta.LabelSelectorOpExists, nil
		case DoesNotExist:
			e.Operator, e.Values = meta.LabelSelectorOpDoesNotExist, nil
		}
		ls.MatchExpressions = append(ls.MatchExpressions, e)
	}
	return ls
}
