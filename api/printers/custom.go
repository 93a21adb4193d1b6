package printers

import (
	"strings"
	"time"

	"github.com/kobune/kobune/api/jsonpath"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// customTable is a custom kind's table: NAME, then each of its printer
// columns, as Kubernetes prints a custom resource (a date prints as an
// age). The API server's Tables and kobectl get both print from it.
func customTable(cols []scheme.Column, wide bool) Table {
	paths := make([]*jsonpath.Template, len(cols))
	narrow, all := []string{"NAME"}, []string{"NAME"}
	for i, c := range cols {
		paths[i], _ = jsonpath.ParseRelaxed(c.JSONPath) // nil: refused when stored; an empty cell
		h := strings.ToUpper(c.Name)
		all = append(all, h)
		if c.Priority == 0 {
			narrow = append(narrow, h)
		}
	}
	t := Table{Headers: narrow}
	if wide {
		t.Headers = all
	}
	t.Row = func(o meta.Object) []string {
		u, ok := o.(*meta.Unstructured)
		if !ok {
			return nil
		}
		obj, err := u.Object()
		if err != nil {
			return nil
		}
		row := []string{u.Name}
		for i, c := range cols {
			if c.Priority != 0 && !wide {
				continue
			}
			var cells []string
			if paths[i] != nil {
				for _, v := range paths[i].Results(obj) {
					cells = append(cells, cellText(v, c.Type))
				}
			}
			row = append(row, strings.Join(cells, ","))
		}
		return row
	}
	return t
}

// cellText prints one value as kubectl does: a date as the time since.
func cellText(v any, typ string) string {
	if s, ok := v.(string); ok && typ == "date" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return SinceOrUnknown(t)
		}
	}
	return jsonpath.Text(v)
}
