package selector

import "testing"

// FuzzParseLabels checks that the parser never panics and that whatever it
// accepts prints to a string that parses back to the same selector.
func FuzzParseLabels(f *testing.F) {
	for _, s := range []string{"app=web", "app=web,tier!=db", "env in (a,b)", "!x", "a.b/c notin (d)", "x==y"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		s, err := ParseLabels(in)
		if err != nil {
			return
		}
		again, err := ParseLabels(s.String())
		if err != nil {
			t.Fatalf("%q printed as %q, which does not parse: %v", in, s.String(), err)
		}
		if again.String() != s.String() {
			t.Fatalf("%q: round trip %q != %q", in, again.String(), s.String())
		}
	})
}
