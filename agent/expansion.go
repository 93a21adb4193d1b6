package agent

import "strings"

// expand replaces the $(VAR) references in s by the variables lookup
// knows, as the kubelet expands env values, command, args and
// subPathExpr: $$ is a literal $, a reference to an unknown variable and
// an unclosed $( stay as written, a $ before anything else is kept.
func expand(s string, lookup func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$': // an escaped $
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i+2:], ')')
			if end < 0 {
				b.WriteString(s[i:]) // unclosed: as written
				return b.String()
			}
			name := s[i+2 : i+2+end]
			if v, ok := lookup(name); ok && name != "" {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+3+end])
			}
			i += 2 + end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

// envLookup reads "NAME=value" entries for expand.
func envLookup(env []string) func(string) (string, bool) {
	vars := make(map[string]string, len(env))
	for _, e := range env {
		name, value, _ := strings.Cut(e, "=")
		vars[name] = value
	}
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// expandAll expands each of list (nil stays nil).
func expandAll(list []string, lookup func(string) (string, bool)) []string {
	if list == nil {
		return nil
	}
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = expand(s, lookup)
	}
	return out
}
