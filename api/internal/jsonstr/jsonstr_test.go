package jsonstr

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The shortcut must agree with encoding/json on every input, plain or not.
func TestAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "500m", "1Gi", "2026-12-01T03:04:05Z", "a\"b", `back\slash`, "<html>", "a&b", "tab\there", "ünï", "\x00", "%25"} {
		want, _ := json.Marshal(s)
		if got := Quote(s); !bytes.Equal(got, want) {
			t.Errorf("Quote(%q) = %s, encoding/json writes %s", s, got, want)
		}
		got, err := Unquote(want)
		if err != nil || got != s {
			t.Errorf("Unquote(%s) = %q, %v; want %q", want, got, err, s)
		}
	}
	for _, bad := range []string{`"abc`, `abc"`, `12`, `"a\q"`, `"`, ``} {
		var s string
		wantErr := json.Unmarshal([]byte(bad), &s)
		if _, err := Unquote([]byte(bad)); (err == nil) != (wantErr == nil) {
			t.Errorf("Unquote(%s): error %v, encoding/json says %v", bad, err, wantErr)
		}
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range []string{`"500m"`, `"a\"b"`, `"\u00fc"`, `""`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		wantErr := json.Unmarshal(b, &want)
		got, err := Unquote(b)
		if (err == nil) != (wantErr == nil) || (err == nil && got != want) {
			t.Fatalf("Unquote(%q) = %q, %v; encoding/json: %q, %v", b, got, err, want, wantErr)
		}
		if err == nil && !bytes.Equal(Quote(got), mustMarshal(got)) {
			t.Fatalf("Quote(%q) differs from encoding/json", got)
		}
	})
}

func mustMarshal(s string) []byte {
	b, _ := json.Marshal(s)
	return b
}
