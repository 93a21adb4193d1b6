package selector

import (
	"fmt"
	"sort"
	"strings"
)

// ParseLabels parses the string form of a label selector:
//
//	app=web,tier!=db        equality and inequality (== is accepted for =)
//	env in (prod,staging)   set membership
//	env notin (dev)         set exclusion
//	canary, !canary         the key exists, or does not
//
// An empty string selects everything.
func ParseLabels(s string) (Selector, error) {
	return parse(s, true)
}

// ParseFields parses a field selector such as "spec.nodeName=node-1,status.phase!=Running".
// Only =, == and != are allowed, as in Kubernetes.
func ParseFields(s string) (Selector, error) {
	return parse(s, false)
}

type lexer struct {
	in  string
	pos int
}

func (l *lexer) skipSpace() {
	for l.pos < len(l.in) && l.in[l.pos] == ' ' {
		l.pos++
	}
}

func (l *lexer) peek() byte {
	l.skipSpace()
	if l.pos >= len(l.in) {
		return 0
	}
	return l.in[l.pos]
}

// word reads up to a delimiter: space , = ! ( ) < >.
func (l *lexer) word() string {
	l.skipSpace()
	start := l.pos
	for l.pos < len(l.in) && !strings.ContainsRune(" ,=!()<>", rune(l.in[l.pos])) {
		l.pos++
	}
	return l.in[start:l.pos]
}

func (l *lexer) errorf(format string, args ...any) error {
	return fmt.Errorf("selector %q at position %d: %s", l.in, l.pos, fmt.Sprintf(format, args...))
}

func parse(in string, labels bool) (Selector, error) {
	l := &lexer{in: in}
	var sel Selector
	if strings.TrimSpace(in) == "" {
		return sel, nil
	}
	for {
		r, err := l.requirement(labels)
		if err != nil {
			return Selector{}, err
		}
		if err := checkRequirement(r, labels); err != nil {
			return Selector{}, l.errorf("%v", err)
		}
		sel.Requirements = append(sel.Requirements, r)
		switch l.peek() {
		case 0:
			return sel, nil
		case ',':
			l.pos++
		default:
			return Selector{}, l.errorf("expected ',' or end of input")
		}
	}
}

func (l *lexer) requirement(labels bool) (Requirement, error) {
	if l.peek() == '!' {
		if !labels {
			return Requirement{}, l.errorf("field selectors do not support '!key'")
		}
		l.pos++
		key := l.word()
		if key == "" {
			return Requirement{}, l.errorf("expected a key after '!'")
		}
		return Requirement{Key: key, Operator: DoesNotExist}, nil
	}
	key := l.word()
	if key == "" {
		return Requirement{}, l.errorf("expected a key")
	}
	switch c := l.peek(); {
	case c == 0 || c == ',':
		if !labels {
			return Requirement{}, l.errorf("field selector %q needs an operator (=, ==, !=)", key)
		}
		return Requirement{Key: key, Operator: Exists}, nil
	case c == '=' || c == '!':
		op := Equals
		if c == '!' {
			op = NotEquals
			l.pos++
			if l.pos >= len(l.in) || l.in[l.pos] != '=' {
				return Requirement{}, l.errorf("expected '=' after '!'")
			}
		}
		l.pos++
		if op == Equals && l.pos < len(l.in) && l.in[l.pos] == '=' {
			l.pos++
		}
		value := l.word()
		return Requirement{Key: key, Operator: op, Values: []string{value}}, nil
	case c == '(' || c == ')' || c == '<' || c == '>':
		return Requirement{}, l.errorf("unexpected %q", c)
	}
	opWord := l.word()
	if !labels {
		return Requirement{}, l.errorf("field selectors support only =, == and !=, not %q", opWord)
	}
	var op Operator
	switch opWord {
	case "in":
		op = In
	case "notin":
		op = NotIn
	default:
		return Requirement{}, l.errorf("unknown operator %q (use =, ==, !=, in, notin)", opWord)
	}
	values, err := l.valueSet()
	if err != nil {
		return Requirement{}, err
	}
	return Requirement{Key: key, Operator: op, Values: values}, nil
}

func (l *lexer) valueSet() ([]string, error) {
	if l.peek() != '(' {
		return nil, l.errorf("expected '(' to start a value list")
	}
	l.pos++
	var values []string
	for {
		values = append(values, l.word())
		switch l.peek() {
		case ',':
			l.pos++
		case ')':
			if len(values) == 1 && values[0] == "" {
				// "x notin ()" would match everything: Kubernetes refuses it.
				return nil, l.errorf("for 'in' and 'notin', the set of values can't be empty")
			}
			l.pos++
			sort.Strings(values)
			return values, nil
		default:
			return nil, l.errorf("expected ',' or ')' in value list")
		}
	}
}

// checkRequirement validates label keys and values; field keys are free-form
// paths checked by the server against what each kind supports.
func checkRequirement(r Requirement, labels bool) error {
	if !labels {
		return nil
	}
	if err := validLabelKey(r.Key); err != nil {
		return err
	}
	for _, v := range r.Values {
		if err := validLabelValue(v); err != nil {
			return err
		}
	}
	return nil
}
