// Package jsonpath is Kubernetes' JSONPath templates, as kubectl reads
// them in -o jsonpath, custom-columns, --sort-by and wait --for=jsonpath: text with {...}
// expressions. An expression is a path from the object ($ or @ optional):
// .field, ['field.with.dots'], [n], [start:end], [*], .*, ..field
// (anywhere below), [?(@.path OP literal)] with ==, !=, <, <=, >, >= (or
// [?(@.path)]: the field exists); {range PATH}...{end} repeats its body for
// each result; {"literal"} prints text (\n and \t understood). A result
// that is an object or a list prints as JSON, several results of one
// expression are separated by spaces, and a missing field prints nothing
// (kubectl's --allow-missing-template-keys, on by default).
//
// It mirrors k8s.io/client-go/util/jsonpath (written anew, not copied).
// It lives in api/ because the API server reads it too: the printer
// columns of CustomResourceDefinitions are JSONPaths.
package jsonpath

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Template is a parsed template.
type Template struct{ nodes []tmplNode }

type tmplNode struct {
	text string // literal text, unless expr
	expr bool   // an expression: path's results are printed
	path []segment
	rng  bool // {range path}: body repeats per result
	body []tmplNode
}

// segment is one step of a path.
type segment struct {
	kind   byte // 'f' field, 'r' recursive field, 'i' index, 's' slice, '*' all, '?' filter
	name   string
	index  int
	lo, hi *int
	filter *filterExpr
}

type filterExpr struct {
	path  []segment
	op    string // "" means: the path exists
	value any
}

// Parse parses a template.
func Parse(tmpl string) (*Template, error) {
	nodes, rest, err := parseNodes(tmpl, false)
	if err != nil {
		return nil, fmt.Errorf("jsonpath %q: %w", tmpl, err)
	}
	if rest != "" {
		return nil, fmt.Errorf("jsonpath %q: {end} without {range}", tmpl)
	}
	return &Template{nodes: nodes}, nil
}

// ParseRelaxed turns kubectl's short forms (.metadata.name,
// metadata.name, {.metadata.name}) into a template.
func ParseRelaxed(expr string) (*Template, error) {
	e := strings.TrimSpace(expr)
	if strings.HasPrefix(e, "{") && strings.HasSuffix(e, "}") {
		return Parse(e)
	}
	if !strings.HasPrefix(e, ".") && !strings.HasPrefix(e, "$") && !strings.HasPrefix(e, "[") {
		e = "." + e
	}
	return Parse("{" + e + "}")
}

// parseNodes reads nodes until the end of s or, inside a range, its {end};
// it returns what follows that {end}.
func parseNodes(s string, inRange bool) ([]tmplNode, string, error) {
	var nodes []tmplNode
	for s != "" {
		open := strings.IndexByte(s, '{')
		if open < 0 {
			nodes = append(nodes, tmplNode{text: s})
			break
		}
		if open > 0 {
			nodes = append(nodes, tmplNode{text: s[:open]})
		}
		end := closingBrace(s, open)
		if end < 0 {
			return nil, "", fmt.Errorf("unclosed {")
		}
		expr := strings.TrimSpace(s[open+1 : end])
		s = s[end+1:]
		switch {
		case expr == "end":
			if !inRange {
				return nil, "", fmt.Errorf("{end} without {range}")
			}
			return nodes, s, nil
		case strings.HasPrefix(expr, "range "):
			path, err := parsePath(strings.TrimSpace(strings.TrimPrefix(expr, "range ")))
			if err != nil {
				return nil, "", err
			}
			body, rest, err := parseNodes(s, true)
			if err != nil {
				return nil, "", err
			}
			nodes = append(nodes, tmplNode{path: path, rng: true, body: body})
			s = rest
		case strings.HasPrefix(expr, `"`):
			lit, err := strconv.Unquote(expr)
			if err != nil {
				return nil, "", fmt.Errorf("literal %s: %w", expr, err)
			}
			nodes = append(nodes, tmplNode{text: lit})
		default:
			path, err := parsePath(expr)
			if err != nil {
				return nil, "", err
			}
			nodes = append(nodes, tmplNode{expr: true, path: path})
		}
	}
	if inRange {
		return nil, "", fmt.Errorf("{range} without {end}")
	}
	return nodes, "", nil
}

// closingBrace finds the } that closes the { at open, skipping quoted text.
func closingBrace(s string, open int) int {
	quote := byte(0)
	for i := open + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote = c
		case quote == 0 && c == '}':
			return i
		}
	}
	return -1
}

// parsePath reads a path such as .items[*].metadata.name.
func parsePath(p string) ([]segment, error) {
	p = strings.TrimPrefix(strings.TrimPrefix(p, "$"), "@")
	var segs []segment
	for p != "" {
		switch {
		case strings.HasPrefix(p, ".."):
			name, rest := fieldName(p[2:])
			if name == "" {
				return nil, fmt.Errorf("a field name after ..")
			}
			segs, p = append(segs, segment{kind: 'r', name: name}), rest
		case strings.HasPrefix(p, ".*"):
			segs, p = append(segs, segment{kind: '*'}), p[2:]
		case p[0] == '.':
			name, rest := fieldName(p[1:])
			if name == "" {
				if rest == "" { // "." alone: the object itself
					return segs, nil
				}
				return nil, fmt.Errorf("a field name after . at %q", p)
			}
			segs, p = append(segs, segment{kind: 'f', name: name}), rest
		case p[0] == '[':
			end := closingBracket(p)
			if end < 0 {
				return nil, fmt.Errorf("unclosed [ at %q", p)
			}
			seg, err := parseBracket(strings.TrimSpace(p[1:end]))
			if err != nil {
				return nil, err
			}
			segs, p = append(segs, seg), p[end+1:]
		default:
			return nil, fmt.Errorf("unexpected %q (paths start with . or [)", p)
		}
	}
	return segs, nil
}

func fieldName(s string) (string, string) {
	i := 0
	for i < len(s) && s[i] != '.' && s[i] != '[' && s[i] != ' ' {
		i++
	}
	return s[:i], s[i:]
}

func closingBracket(s string) int {
	depth, quote := 0, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'':
			quote = c
		case c == '[' || c == '(':
			depth++
		case c == ']' || c == ')':
			depth--
			if depth == 0 && c == ']' {
				return i
			}
		}
	}
	return -1
}

func parseBracket(in string) (segment, error) {
	switch {
	case in == "*":
		return segment{kind: '*'}, nil
	case strings.HasPrefix(in, "'") || strings.HasPrefix(in, `"`):
		return segment{kind: 'f', name: strings.Trim(in, `'"`)}, nil
	case strings.HasPrefix(in, "?(") && strings.HasSuffix(in, ")"):
		f, err := parseFilter(strings.TrimSpace(in[2 : len(in)-1]))
		return segment{kind: '?', filter: f}, err
	case strings.Contains(in, ":"):
		lo, hi, _ := strings.Cut(in, ":")
		seg := segment{kind: 's'}
		for _, b := range []struct {
			s   string
			dst **int
		}{{lo, &seg.lo}, {strings.Split(hi, ":")[0], &seg.hi}} {
			if t := strings.TrimSpace(b.s); t != "" {
				n, err := strconv.Atoi(t)
				if err != nil {
					return seg, fmt.Errorf("slice [%s]: %w", in, err)
				}
				*b.dst = &n
			}
		}
		return seg, nil
	}
	n, err := strconv.Atoi(in)
	if err != nil {
		return segment{}, fmt.Errorf("[%s]: an index, a slice, *, a quoted name or a filter ?(...)", in)
	}
	return segment{kind: 'i', index: n}, nil
}

func parseFilter(in string) (*filterExpr, error) {
	for _, op := range []string{"==", "!=", "<=", ">=", "<", ">"} {
		if l, r, ok := strings.Cut(in, op); ok {
			path, err := parsePath(strings.TrimSpace(l))
			if err != nil {
				return nil, err
			}
			return &filterExpr{path: path, op: op, value: literal(strings.TrimSpace(r))}, nil
		}
	}
	path, err := parsePath(in)
	return &filterExpr{path: path}, err
}

func literal(s string) any {
	if len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0] {
		return s[1 : len(s)-1]
	}
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		return f
	}
	switch s {
	case "true":
		return true
	case "false":
		return false
	}
	return s
}

// Execute renders the template on a JSON value (decoded into any).
func (t *Template) Execute(v any) (string, error) {
	var b strings.Builder
	if err := execNodes(&b, t.nodes, v); err != nil {
		return "", err
	}
	return b.String(), nil
}

// Results are the values the template's single expression gives (for
// custom-columns and --sort-by).
func (t *Template) Results(v any) []any {
	for _, n := range t.nodes {
		if n.expr {
			return walk([]any{v}, n.path)
		}
	}
	return nil
}

func execNodes(b *strings.Builder, nodes []tmplNode, v any) error {
	for _, n := range nodes {
		switch {
		case n.rng:
			for _, item := range walk([]any{v}, n.path) {
				if err := execNodes(b, n.body, item); err != nil {
					return err
				}
			}
		case n.expr:
			for i, r := range walk([]any{v}, n.path) {
				if i > 0 {
					b.WriteByte(' ')
				}
				b.WriteString(Text(r))
			}
		default:
			b.WriteString(n.text)
		}
	}
	return nil
}

// Text prints a result as kubectl does: strings bare, objects and
// lists as JSON.
func Text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
	return strings.TrimSuffix(buf.String(), "\n")
}

// walk applies the segments to each value; missing fields give nothing.
func walk(vals []any, segs []segment) []any {
	for _, s := range segs {
		var next []any
		for _, v := range vals {
			next = append(next, step(v, s)...)
		}
		vals = next
	}
	return vals
}

func step(v any, s segment) []any {
	switch s.kind {
	case 'f':
		if m, ok := v.(map[string]any); ok {
			if x, ok := m[s.name]; ok {
				return []any{x}
			}
		}
	case 'r':
		return recurse(v, s.name)
	case '*':
		switch x := v.(type) {
		case []any:
			return x
		case map[string]any:
			keys := make([]string, 0, len(x))
			for k := range x {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			out := make([]any, len(keys))
			for i, k := range keys {
				out[i] = x[k]
			}
			return out
		}
	case 'i':
		if a, ok := v.([]any); ok {
			i := s.index
			if i < 0 {
				i += len(a)
			}
			if i >= 0 && i < len(a) {
				return []any{a[i]}
			}
		}
	case 's':
		if a, ok := v.([]any); ok {
			lo, hi := 0, len(a)
			if s.lo != nil {
				lo = clampIndex(*s.lo, len(a))
			}
			if s.hi != nil {
				hi = clampIndex(*s.hi, len(a))
			}
			if lo < hi {
				return a[lo:hi]
			}
		}
	case '?':
		a, ok := v.([]any)
		if !ok {
			return nil
		}
		var out []any
		for _, item := range a {
			if s.filter.matches(item) {
				out = append(out, item)
			}
		}
		return out
	}
	return nil
}

func clampIndex(i, n int) int {
	if i < 0 {
		i += n
	}
	return max(0, min(i, n))
}

func recurse(v any, name string) []any {
	var out []any
	switch x := v.(type) {
	case map[string]any:
		if f, ok := x[name]; ok {
			out = append(out, f)
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, recurse(x[k], name)...)
		}
	case []any:
		for _, item := range x {
			out = append(out, recurse(item, name)...)
		}
	}
	return out
}

func (f *filterExpr) matches(item any) bool {
	got := walk([]any{item}, f.path)
	if f.op == "" {
		return len(got) > 0
	}
	for _, g := range got {
		if compare(g, f.op, f.value) {
			return true
		}
	}
	return false
}

func compare(a any, op string, b any) bool {
	if n, ok := a.(json.Number); ok {
		a, _ = n.Float64()
	}
	af, aNum := a.(float64)
	bf, bNum := b.(float64)
	if aNum && bNum {
		switch op {
		case "==":
			return af == bf
		case "!=":
			return af != bf
		case "<":
			return af < bf
		case "<=":
			return af <= bf
		case ">":
			return af > bf
		case ">=":
			return af >= bf
		}
	}
	as, bs := Text(a), Text(b)
	switch op {
	case "==":
		return as == bs
	case "!=":
		return as != bs
	case "<":
		return as < bs
	case "<=":
		return as <= bs
	case ">":
		return as > bs
	case ">=":
		return as >= bs
	}
	return false
}

// ToJSONValue turns an object into the generic value templates read.
func ToJSONValue(obj any) (any, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	err = dec.Decode(&v)
	return v, err
}
