package selector

import (
	"fmt"
	"strings"
)

// The name checks are hand-written loops rather than regular expressions:
// they run for every label of every object the API server admits.

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }

// IsDNS1123Label reports whether s matches [a-z0-9]([-a-z0-9]*[a-z0-9])? (length is the caller's rule).
func IsDNS1123Label(s string) bool {
	if s == "" || !isLowerAlnum(s[0]) || !isLowerAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if !isLowerAlnum(s[i]) && s[i] != '-' {
			return false
		}
	}
	return true
}

// IsDNS1123Subdomain reports whether s is dot-separated DNS-1123 labels.
func IsDNS1123Subdomain(s string) bool {
	if s == "" {
		return false
	}
	for _, part := range strings.Split(s, ".") {
		if !IsDNS1123Label(part) {
			return false
		}
	}
	return true
}

// isQualifiedName matches ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9].
func isQualifiedName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		if c := s[i]; !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// ValidLabelKey checks a label key: an optional DNS subdomain prefix and '/',
// then a name of at most 63 characters of alphanumerics, '-', '_' and '.'.
func ValidLabelKey(key string) error { return validLabelKey(key) }

// ValidLabelValue checks a label value: empty, or at most 63 characters of
// alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
func ValidLabelValue(v string) error { return validLabelValue(v) }

func validLabelKey(key string) error {
	name := key
	if prefix, rest, ok := strings.Cut(key, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !IsDNS1123Subdomain(prefix) {
			return fmt.Errorf("label key %q: prefix must be a lowercase DNS subdomain", key)
		}
		name = rest
	}
	if name == "" || len(name) > 63 || !isQualifiedName(name) {
		return fmt.Errorf("label key %q: name part must be 1-63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric", key)
	}
	return nil
}

func validLabelValue(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > 63 || !isQualifiedName(v) {
		return fmt.Errorf("label value %q: must be at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric", v)
	}
	return nil
}
