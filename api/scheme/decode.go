package scheme

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/k8sapi"
	"github.com/kobune/kobune/api/meta"
)

// Document is one object decoded from a manifest.
type Document struct {
	Kind   *Kind
	Object meta.Object
	// Line is where the document starts in its source (1-based).
	Line int
	// Unknown lists the fields Kubernetes does not have either (typos), as
	// `unknown field "spec.foo"`; Unsupported the Kubernetes fields Kobune
	// does not support, as "spec.template.spec.runtimeClassName: not
	// supported by kobune" (CheckFields).
	Unknown, Unsupported []string
	// Err is why this document cannot be used (DecodeEach): an unknown
	// kind, a field of the wrong type, invalid YAML. Its line is in it.
	Err error
	// JSON is the document as written (YAML turned into JSON), for
	// kobectl apply: its three-way merge must see which fields the user
	// wrote, not the typed object's defaults and empty structs.
	JSON []byte
}

// Decode reads every object of a manifest: YAML documents separated by
// "---", a JSON object or array, or a kind: List. The first document that
// cannot be used is the error, naming its line.
func Decode(data []byte) ([]Document, error) {
	docs, err := DecodeEach(data)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		if d.Err != nil {
			return nil, d.Err
		}
	}
	return docs, nil
}

// DecodeEach is Decode that keeps going: a document that cannot be used
// comes back with its Err, the others decoded — kubectl applies every
// document it can and reports each failure. The error is for a JSON
// stream that cannot be read on from where it breaks.
func DecodeEach(data []byte) ([]Document, error) { return (*Kinds)(nil).DecodeEach(data) }

// DecodeEach is DecodeEach with these kinds: custom ones a server
// discovered (client.Discover) besides the built-in ones.
func (s *Kinds) DecodeEach(data []byte) ([]Document, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
		return s.decodeJSONStream(data)
	}
	var docs []Document
	for _, chunk := range splitYAML(data) {
		if len(bytes.TrimSpace(stripComments(chunk.text))) == 0 {
			continue
		}
		js, err := yaml.YAMLToJSON(chunk.text)
		if err != nil {
			docs = append(docs, Document{Line: chunk.line, Err: fmt.Errorf("line %d: invalid YAML: %s", chunk.line+yamlErrorLine(err)-1, strings.TrimPrefix(stripLine(err.Error()), "yaml: "))})
			continue
		}
		docs = append(docs, s.decodeValue(js, chunk.line)...)
	}
	return docs, nil
}

type yamlChunk struct {
	text []byte
	line int
}

// splitYAML cuts at lines that are exactly "---" (optionally followed by a comment).
func splitYAML(data []byte) []yamlChunk {
	var chunks []yamlChunk
	lines := bytes.SplitAfter(data, []byte("\n"))
	start, cur := 1, []byte{}
	for i, l := range lines {
		t := bytes.TrimRight(l, " \t\r\n")
		if bytes.Equal(t, []byte("---")) || bytes.HasPrefix(t, []byte("--- #")) {
			chunks = append(chunks, yamlChunk{cur, start})
			cur, start = []byte{}, i+2
			continue
		}
		cur = append(cur, l...)
	}
	return append(chunks, yamlChunk{cur, start})
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, l := range bytes.Split(b, []byte("\n")) {
		if t := bytes.TrimSpace(l); len(t) > 0 && t[0] != '#' {
			out = append(out, l)
		}
	}
	return bytes.Join(out, []byte("\n"))
}

var lineRe = regexp.MustCompile(`line (\d+)`)

func yamlErrorLine(err error) int {
	if m := lineRe.FindStringSubmatch(err.Error()); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n
	}
	return 1
}

func stripLine(msg string) string {
	return strings.TrimSpace(strings.Replace(lineRe.ReplaceAllString(msg, ""), " :", "", 1))
}

func (s *Kinds) decodeJSONStream(data []byte) ([]Document, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	var docs []Document
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return docs, nil
			}
			return nil, fmt.Errorf("line %d: invalid JSON: %v", lineAt(data, int(dec.InputOffset())), err)
		}
		start := lineAt(data, int(dec.InputOffset())-len(raw))
		if len(raw) > 0 && raw[0] == '[' {
			var items []json.RawMessage
			if err := json.Unmarshal(raw, &items); err != nil {
				return nil, fmt.Errorf("line %d: invalid JSON: %v", start, err)
			}
			for _, it := range items {
				docs = append(docs, s.decodeValue(it, start)...)
			}
			continue
		}
		docs = append(docs, s.decodeValue(raw, start)...)
	}
}

func lineAt(data []byte, offset int) int {
	if offset > len(data) {
		offset = len(data)
	}
	return bytes.Count(data[:offset], []byte("\n")) + 1
}

// decodeValue decodes one JSON object (or a List of them) found at line.
// DecodeDocument decodes one document again (its JSON, from its line),
// with these kinds: a client that learned custom kinds from the server.
func (s *Kinds) DecodeDocument(js []byte, line int) []Document { return s.decodeValue(js, line) }

func (s *Kinds) decodeValue(js []byte, line int) []Document {
	fail := func(format string, args ...any) []Document {
		return []Document{{Line: line, JSON: js, Err: fmt.Errorf("line %d: "+format, append([]any{line}, args...)...)}}
	}
	var generic map[string]any
	if err := json.Unmarshal(js, &generic); err != nil {
		return fail("a manifest document must be an object with apiVersion and kind: %v", err)
	}
	kindName, _ := generic["kind"].(string)
	apiVersion, _ := generic["apiVersion"].(string)
	if kindName == "" {
		return fail("kind is required (the document has no `kind` field)")
	}
	if apiVersion == "" {
		return fail("apiVersion is required for kind %s", kindName)
	}
	if kindName == "List" || strings.HasSuffix(kindName, "List") && apiVersion == "v1" {
		items, _ := generic["items"].([]any)
		var docs []Document
		for _, it := range items {
			b, _ := json.Marshal(it)
			docs = append(docs, s.decodeValue(b, line)...)
		}
		return docs
	}
	k, err := s.ByKind(apiVersion, kindName)
	if err != nil {
		return fail("%w", err)
	}
	if v, ok := k.ServedAt(apiVersion); ok {
		// Another served version (autoscaling/v1): its own fields are
		// checked, then it is read as the stored version says it.
		if t, ok := k8sapi.ForKind(apiVersion, kindName); ok {
			if typos := k8sapi.UnknownFields(t, generic); len(typos) > 0 {
				return fail("%s %s: unknown field %q (Kubernetes has no such field in %s)", apiVersion, kindName, typos[0], apiVersion)
			}
		}
		if js, err = v.ToStored(js); err != nil {
			return fail("%s %w", kindName, err)
		}
		generic = nil
		if err := json.Unmarshal(js, &generic); err != nil {
			return fail("%s %w", kindName, err)
		}
	}
	obj, err := k.Decode(js)
	if err != nil {
		return fail("%s %w", kindName, err)
	}
	unknown, unsupported := CheckFields(k, generic)
	return []Document{{Kind: k, Object: obj, Line: line, Unknown: unknown, Unsupported: unsupported, JSON: js}}
}

// describeJSONError rewrites encoding/json errors to name the field path.
func describeJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "<root>"
		}
		return fmt.Errorf("%s: expected %s, got %s", field, friendlyType(te.Type.String()), te.Value)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, err)
	}
	return fmt.Errorf("%s", strings.TrimPrefix(err.Error(), "json: "))
}

func friendlyType(t string) string {
	switch {
	case strings.HasPrefix(t, "int"), strings.HasPrefix(t, "uint"):
		return "an integer"
	case t == "string":
		return "a string"
	case t == "bool":
		return "true or false"
	case strings.HasPrefix(t, "[]"):
		return "a list"
	case strings.HasPrefix(t, "map["):
		return "a map"
	}
	return "an object"
}
