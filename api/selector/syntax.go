package selector

import (
	"fmt"
	"regexp"
	"strings"
)

var (
	qualifiedNameRe = regexp.MustCompile(`^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`)
	dns1123SubRe    = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
)

// ValidLabelKey checks a label key: an optional DNS subdomain prefix and '/',
// then a name of at most 63 characters of alphanumerics, '-', '_' and '.'.
func ValidLabelKey(key string) error { return validLabelKey(key) }

// ValidLabelValue checks a label value: empty, or at most 63 characters of
// alphanumerics, '-', '_' and '.', starting and ending alphanumeric.
func ValidLabelValue(v string) error { return validLabelValue(v) }

func validLabelKey(key string) error {
	name := key
	if prefix, rest, ok := strings.Cut(key, "/"); ok {
		if prefix == "" || len(prefix) > 253 || !dns1123SubRe.MatchString(prefix) {
			return fmt.Errorf("label key %q: prefix must be a lowercase DNS subdomain", key)
		}
		name = rest
	}
	if name == "" || len(name) > 63 || !qualifiedNameRe.MatchString(name) {
		return fmt.Errorf("label key %q: name part must be 1-63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric", key)
	}
	return nil
}

func validLabelValue(v string) error {
	if v == "" {
		return nil
	}
	if len(v) > 63 || !qualifiedNameRe.MatchString(v) {
		return fmt.Errorf("label value %q: must be at most 63 characters of alphanumerics, '-', '_' or '.', starting and ending with an alphanumeric", v)
	}
	return nil
}
