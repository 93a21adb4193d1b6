package get

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"text/template"

	"github.com/kobune/kobune/api/jsonpath"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheme"
)

// The -o forms beyond tables, yaml and json: jsonpath, custom-columns and
// go-template (each also from a file), as kubectl reads them.

// outputFormats is what -o accepts, for its help and its error.
const outputFormats = "yaml, json, wide, name, jsonpath=TEMPLATE, jsonpath-file=FILE, custom-columns=NAME:PATH,..., custom-columns-file=FILE, go-template=TEMPLATE, go-template-file=FILE"

// templateOutput is a parsed -o jsonpath / custom-columns / go-template.
type templateOutput struct {
	jsonPath *jsonpath.Template
	columns  []customColumn
	goTmpl   *template.Template
}

type customColumn struct {
	header string
	path   *jsonpath.Template
}

// parseOutput checks -o; a template form is parsed now, so that a bad
// template is an error before anything is fetched.
func parseOutput(format string) (*templateOutput, error) {
	kind, arg, hasArg := strings.Cut(format, "=")
	switch kind {
	case "", "wide", "yaml", "json", "name":
		if !hasArg {
			return nil, nil
		}
	case "jsonpath-file", "custom-columns-file", "go-template-file":
		b, err := os.ReadFile(arg)
		if err != nil {
			return nil, fmt.Errorf("-o %s: %w", kind, err)
		}
		kind, arg = strings.TrimSuffix(kind, "-file"), strings.TrimSpace(string(b))
		if kind == "custom-columns" { // a file: a header line, then a line of paths
			lines := strings.SplitN(arg, "\n", 2)
			if len(lines) != 2 {
				return nil, fmt.Errorf("-o custom-columns-file: want a line of headers and a line of paths")
			}
			heads, paths := strings.Fields(lines[0]), strings.Fields(lines[1])
			if len(heads) != len(paths) {
				return nil, fmt.Errorf("-o custom-columns-file: %d headers but %d paths", len(heads), len(paths))
			}
			var spec []string
			for i := range heads {
				spec = append(spec, heads[i]+":"+paths[i])
			}
			arg = strings.Join(spec, ",")
		}
	}
	switch kind {
	case "jsonpath":
		t, err := jsonpath.Parse(arg)
		if err != nil {
			return nil, err
		}
		return &templateOutput{jsonPath: t}, nil
	case "custom-columns":
		if arg == "" {
			return nil, fmt.Errorf("-o custom-columns: name columns, as in custom-columns=NAME:.metadata.name,NODE:.spec.nodeName")
		}
		var cols []customColumn
		for _, spec := range strings.Split(arg, ",") {
			h, p, ok := strings.Cut(spec, ":")
			if !ok {
				return nil, fmt.Errorf("-o custom-columns: %q is not HEADER:PATH", spec)
			}
			t, err := jsonpath.ParseRelaxed(p)
			if err != nil {
				return nil, err
			}
			cols = append(cols, customColumn{header: h, path: t})
		}
		return &templateOutput{columns: cols}, nil
	case "go-template":
		t, err := template.New("output").Option("missingkey=default").Parse(arg)
		if err != nil {
			return nil, fmt.Errorf("-o go-template: %w", err)
		}
		return &templateOutput{goTmpl: t}, nil
	}
	return nil, fmt.Errorf("unknown output format %q: use %s", format, outputFormats)
}

// print writes the objects through the template: jsonpath and go-template
// see one object when one was named, else a List; custom-columns print a
// row per object.
func (t *templateOutput) print(p *printer, objs []meta.Object, single bool) error {
	if t.columns != nil {
		tw := tabwriter.NewWriter(p.out, 3, 0, 3, ' ', 0)
		if !p.noHeader {
			var h []string
			for _, c := range t.columns {
				h = append(h, c.header)
			}
			fmt.Fprintln(tw, strings.Join(h, "\t"))
		}
		for _, o := range objs {
			v, err := jsonpath.ToJSONValue(o)
			if err != nil {
				return err
			}
			var row []string
			for _, c := range t.columns {
				var vals []string
				for _, r := range c.path.Results(v) {
					vals = append(vals, jsonpath.Text(r))
				}
				row = append(row, printers.None(strings.Join(vals, ",")))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		return tw.Flush()
	}
	v, err := jsonpath.ToJSONValue(listOrOne(objs, single))
	if err != nil {
		return err
	}
	if t.goTmpl != nil {
		return t.goTmpl.Execute(p.out, v)
	}
	s, err := t.jsonPath.Execute(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(p.out, s)
	return err
}

// sortObjects orders objects by a JSONPath (--sort-by): numbers by value,
// anything else by its text; objects without the field first.
func sortObjects(objs []meta.Object, expr string) error {
	t, err := jsonpath.ParseRelaxed(expr)
	if err != nil {
		return fmt.Errorf("--sort-by: %w", err)
	}
	type keyed struct {
		num   float64
		isNum bool
		text  string
	}
	keys := make(map[meta.Object]keyed, len(objs))
	for _, o := range objs {
		v, err := jsonpath.ToJSONValue(o)
		if err != nil {
			return err
		}
		var k keyed
		if r := t.Results(v); len(r) > 0 {
			if n, ok := r[0].(json.Number); ok {
				k.num, _ = n.Float64()
				k.isNum = true
			} else {
				k.text = jsonpath.Text(r[0])
				if q, err := parseQuantityValue(k.text); err == nil {
					k.num, k.isNum = q, true
				}
			}
		}
		keys[o] = k
	}
	sort.SliceStable(objs, func(i, j int) bool {
		a, b := keys[objs[i]], keys[objs[j]]
		if a.isNum && b.isNum {
			return a.num < b.num
		}
		return a.text < b.text
	})
	return nil
}

// parseQuantityValue reads a quantity ("500m", "2Gi") as a number, for
// sorting by resources as kubectl does.
func parseQuantityValue(s string) (float64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, err
	}
	return float64(q.MilliValue()) / 1000, nil
}

// Print prints objects of kind k as get does with -o format ("": the
// table); single says one object was asked for by name.
func Print(out io.Writer, k *scheme.Kind, format string, objs []meta.Object, single bool) error {
	return (&printer{out: out, kind: k, format: format}).print(objs, single)
}
