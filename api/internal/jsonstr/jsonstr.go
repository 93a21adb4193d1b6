package jsonstr

import "encoding/json"

// plain reports whether c stands for itself inside a JSON string as
// encoding/json writes it (printable ASCII other than the quote, the
// backslash and the HTML-escaped <, > and &).
func plain(c byte) bool {
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
}

// Unquote returns the string a JSON string literal b holds. It handles the
// plain case itself and leaves escapes to encoding/json.
func Unquote(b []byte) (string, error) {
	if n := len(b); n >= 2 && b[0] == '"' && b[n-1] == '"' {
		i := 1
		for i < n-1 && plain(b[i]) {
			i++
		}
		if i == n-1 {
			return string(b[1 : n-1]), nil
		}
	}
	var s string
	err := json.Unmarshal(b, &s)
	return s, err
}

// Quote returns s as a JSON string literal, byte for byte as json.Marshal
// writes it.
func Quote(s string) []byte {
	for i := 0; i < len(s); i++ {
		if !plain(s[i]) {
			b, _ := json.Marshal(s)
			return b
		}
	}
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
