package validation

import (
	"fmt"
	"strconv"
	"strings"
)

// Path is a field path such as spec.containers[0].ports[1].containerPort.
// Validation builds one for every field it visits, so a step costs one small
// allocation and its text is only formatted when an error is printed.
type Path struct {
	parent         *Path
	name           string // a field name, or a map key when isKey
	index          int    // a list index when isIndex
	isIndex, isKey bool
}

// NewPath starts a path at a top-level field.
func NewPath(name string, more ...string) *Path {
	p := &Path{name: name}
	for _, m := range more {
		p = p.Child(m)
	}
	return p
}

// Child appends field names.
func (p *Path) Child(name string, more ...string) *Path {
	c := &Path{parent: p, name: name}
	for _, m := range more {
		c = c.Child(m)
	}
	return c
}

// Index appends a list index.
func (p *Path) Index(i int) *Path { return &Path{parent: p, index: i, isIndex: true} }

// Key appends a map key.
func (p *Path) Key(k string) *Path { return &Path{parent: p, name: k, isKey: true} }

// String prints the path in dotted form.
func (p *Path) String() string {
	if p == nil {
		return "<root>"
	}
	var parts []string
	for q := p; q != nil; q = q.parent {
		switch {
		case q.isIndex:
			parts = append(parts, "["+strconv.Itoa(q.index)+"]")
		case q.isKey:
			parts = append(parts, "["+q.name+"]")
		default:
			parts = append(parts, q.name)
		}
	}
	var b strings.Builder
	for i := len(parts) - 1; i >= 0; i-- {
		s := parts[i]
		if b.Len() > 0 && s[0] != '[' {
			b.WriteByte('.')
		}
		b.WriteString(s)
	}
	return b.String()
}

// ErrorType says what kind of problem a field has.
type ErrorType string

// The error types, with Kubernetes' wording.
const (
	Required     ErrorType = "Required value"
	Invalid      ErrorType = "Invalid value"
	Duplicate    ErrorType = "Duplicate value"
	NotSupported ErrorType = "Unsupported value"
	Forbidden    ErrorType = "Forbidden"
	TooLong      ErrorType = "Too long"
	TooMany      ErrorType = "Too many"
)

// Error is one problem with one field.
type Error struct {
	Type   ErrorType
	Field  string
	Value  any
	Detail string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Field)
	b.WriteString(": ")
	b.WriteString(string(e.Type))
	if e.Type == Invalid || e.Type == Duplicate || e.Type == NotSupported {
		fmt.Fprintf(&b, ": %s", quote(e.Value))
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	return b.String()
}

func quote(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// ErrorList is the result of validating an object.
type ErrorList []*Error

// ToError joins the list into one error, or returns nil when it is empty.
func (l ErrorList) ToError() error {
	if len(l) == 0 {
		return nil
	}
	msgs := make([]string, len(l))
	for i, e := range l {
		msgs[i] = e.Error()
	}
	return fmt.Errorf("%s", strings.Join(msgs, "; "))
}

// NewRequired reports a missing field.
func NewRequired(p *Path, detail string) *Error {
	return &Error{Type: Required, Field: p.String(), Detail: detail}
}

// NewInvalid reports a field whose value breaks a rule.
func NewInvalid(p *Path, value any, detail string) *Error {
	return &Error{Type: Invalid, Field: p.String(), Value: value, Detail: detail}
}

// NewDuplicate reports a value that must be unique.
func NewDuplicate(p *Path, value any) *Error {
	return &Error{Type: Duplicate, Field: p.String(), Value: value}
}

// NewNotSupported reports a value outside an allowed set.
func NewNotSupported(p *Path, value any, allowed []string) *Error {
	return &Error{Type: NotSupported, Field: p.String(), Value: value, Detail: "supported values: " + strings.Join(allowed, ", ")}
}

// NewForbidden reports a field that may not be set (or changed).
func NewForbidden(p *Path, detail string) *Error {
	return &Error{Type: Forbidden, Field: p.String(), Detail: detail}
}

// NewTooMany reports a list over its length limit, as Kubernetes words it
// ("Too many: 40: must have at most 32 items").
func NewTooMany(p *Path, n, max int) *Error {
	return &Error{Type: TooMany, Field: p.String(), Detail: fmt.Sprintf("%d: must have at most %d items", n, max)}
}

// NewTooLong reports a value over its length limit.
func NewTooLong(p *Path, value any, max int) *Error {
	return &Error{Type: TooLong, Field: p.String(), Value: value, Detail: fmt.Sprintf("must have at most %d characters", max)}
}
