package scheme

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// DuplicateFields names the keys that appear twice in one JSON object of
// data, by path ("spec.replicas", "spec.containers[0].name"): Go's decoder
// keeps the last silently, Kubernetes' strict decoding reports them
// (duplicate field "spec.replicas"), an error under Strict field
// validation and a warning under Warn. It runs on every write, so it scans
// the bytes without decoding them (keys compared as written, without
// allocating unless an object has many keys); data that is not JSON has
// none.
func DuplicateFields(data []byte) []string {
	s := dupScanner{data: data}
	s.value()
	return s.out
}

type dupScanner struct {
	data []byte
	i    int
	// path is where the scanner is: keys, or indexes (key nil).
	path []pathStep
	out  []string
	bad  bool
}

type pathStep struct {
	key   []byte
	index int
}

func (s *dupScanner) ws() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// str skips a string at s.i (its opening quote) and returns its raw bytes.
func (s *dupScanner) str() []byte {
	start := s.i + 1
	for j := start; j < len(s.data); j++ {
		switch s.data[j] {
		case '\\':
			j++
		case '"':
			s.i = j + 1
			return s.data[start:j]
		}
	}
	s.bad = true
	return nil
}

func (s *dupScanner) value() {
	s.ws()
	if s.i >= len(s.data) || s.bad {
		s.bad = true
		return
	}
	switch s.data[s.i] {
	case '{':
		s.object()
	case '[':
		s.i++
		for n := 0; s.next(n, ']'); n++ {
			s.path = append(s.path, pathStep{index: n})
			s.value()
			s.path = s.path[:len(s.path)-1]
		}
	case '"':
		s.str()
	default: // a number, true, false, null
		for s.i < len(s.data) && !strings.ContainsRune(",}] \t\n\r", rune(s.data[s.i])) {
			s.i++
		}
	}
}

// next moves to the n-th member of an array or object: false at its end
// (the closing byte consumed) or on bytes that are not JSON.
func (s *dupScanner) next(n int, closing byte) bool {
	if s.bad {
		return false
	}
	s.ws()
	if s.i < len(s.data) && s.data[s.i] == closing {
		s.i++
		return false
	}
	if n > 0 {
		if s.i >= len(s.data) || s.data[s.i] != ',' {
			s.bad = true
			return false
		}
		s.i++
	}
	return true
}

func (s *dupScanner) object() {
	s.i++
	var keys [][]byte
	var many map[string]bool // past 16 keys, a map instead of comparing each
	for n := 0; s.next(n, '}'); n++ {
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != '"' {
			s.bad = true
			return
		}
		key := s.str()
		dup := false
		if many != nil {
			dup = many[string(key)]
			many[string(key)] = true
		} else {
			for _, k := range keys {
				if bytes.Equal(k, key) {
					dup = true
					break
				}
			}
			keys = append(keys, key)
			if len(keys) > 16 {
				many = make(map[string]bool, 2*len(keys))
				for _, k := range keys {
					many[string(k)] = true
				}
			}
		}
		s.path = append(s.path, pathStep{key: key})
		if dup {
			s.out = append(s.out, fmt.Sprintf("duplicate field %q", s.where()))
		}
		s.ws()
		if s.i >= len(s.data) || s.data[s.i] != ':' {
			s.bad = true
			return
		}
		s.i++
		s.value()
		s.path = s.path[:len(s.path)-1]
	}
}

// where is the current path: "spec.containers[0].name".
func (s *dupScanner) where() string {
	var b strings.Builder
	for _, p := range s.path {
		if p.key == nil {
			b.WriteString("[" + strconv.Itoa(p.index) + "]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.Write(p.key)
	}
	return b.String()
}
