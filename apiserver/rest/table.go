package rest

import (
	"encoding/json"
	"errors"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/printers"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/apierrors"
)

// Tables (meta.k8s.io/v1 Table): what kubectl get asks for (Accept:
// application/json;as=Table;g=meta.k8s.io;v=v1) and prints as it comes.
// The columns are api/printers', the same that kobectl prints, so both
// CLIs show the same table for the same objects; the columns -o wide adds
// have priority 1, which kubectl shows only with -o wide.

type tableColumn struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Format      string `json:"format"`
	Description string `json:"description"`
	Priority    int    `json:"priority"`
}

type tableRow struct {
	Cells  []any           `json:"cells"`
	Object json.RawMessage `json:"object,omitempty"`
}

type table struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		ResourceVersion    string `json:"resourceVersion,omitempty"`
		Continue           string `json:"continue,omitempty"`
		RemainingItemCount *int64 `json:"remainingItemCount,omitempty"`
	} `json:"metadata"`
	ColumnDefinitions []tableColumn `json:"columnDefinitions"`
	Rows              []tableRow    `json:"rows"`
}

// columnName is a header as Kubernetes names Table columns ("Name",
// "Up-to-date"); kubectl prints them upper-cased, as kobectl does.
func columnName(h string) string {
	if h == "" {
		return h
	}
	return h[:1] + strings.ToLower(h[1:])
}

// buildTable makes the Table of stored objects. includeObject is the
// query parameter: "Metadata" (the default: each row carries the object's
// metadata, from which kubectl prints namespaces and labels), "Object" or
// "None".
func buildTable(k *scheme.Kind, items [][]byte, rv, includeObject string, withColumns bool) (*table, error) {
	narrow, wide := printers.For(k, false), printers.For(k, true)
	t := &table{Kind: "Table", APIVersion: "meta.k8s.io/v1", Rows: []tableRow{}}
	t.Metadata.ResourceVersion = rv
	if withColumns && k.Custom != nil && len(k.Custom.Columns) > 0 {
		// A custom kind's columns as its definition declares them.
		t.ColumnDefinitions = append(t.ColumnDefinitions, tableColumn{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace."})
		for _, c := range k.Custom.Columns {
			t.ColumnDefinitions = append(t.ColumnDefinitions, tableColumn{Name: c.Name, Type: c.Type, Format: c.Format, Description: c.Description, Priority: int(c.Priority)})
		}
	} else if withColumns {
		for i, h := range wide.Headers {
			c := tableColumn{Name: columnName(h), Type: "string", Description: h}
			if i == 0 && h == "NAME" {
				c.Format = "name"
			}
			if i >= len(narrow.Headers) {
				c.Priority = 1
			}
			t.ColumnDefinitions = append(t.ColumnDefinitions, c)
		}
	}
	t.Rows = make([]tableRow, len(items))
	err := inParallel(len(items), func(i int) error {
		b := items[i]
		o, err := k.Decode(b)
		if err != nil {
			return status.Errorf(codes.Internal, "decode stored %s: %v", k.Kind, err)
		}
		row := tableRow{Cells: []any{}}
		for _, c := range wide.Row(o) {
			row.Cells = append(row.Cells, c)
		}
		switch includeObject {
		case "Object":
			row.Object = b
		case "None":
		default:
			row.Object = partialMetadata(o.GetObjectMeta())
		}
		t.Rows[i] = row
		return nil
	})
	if err != nil {
		return nil, err
	}
	return t, nil
}

// inParallel runs do(0) ... do(n-1) on every CPU: a page of a list is
// hundreds of objects to decode one by one (most of the time of a kubectl
// get), each independent of the others. It returns the first error.
func inParallel(n int, do func(i int) error) error {
	workers := min(runtime.GOMAXPROCS(0), n/32+1) // a few objects are not worth a goroutine
	if workers <= 1 {
		for i := range n {
			if err := do(i); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		next atomic.Int64
		wg   sync.WaitGroup
		errs = make([]error, workers)
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				if err := do(i); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// partialMetadata is a meta.k8s.io/v1 PartialObjectMetadata.
func partialMetadata(m *meta.ObjectMeta) json.RawMessage {
	return mustJSON(map[string]any{"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": m})
}

func writeTable(w http.ResponseWriter, r *http.Request, k *scheme.Kind, items [][]byte, rv, cont string, remaining *int64) {
	t, err := buildTable(k, items, rv, r.URL.Query().Get("includeObject"), true)
	if err != nil {
		writeError(w, err, nil)
		return
	}
	t.Metadata.Continue, t.Metadata.RemainingItemCount = cont, remaining
	writeObject(w, http.StatusOK, t)
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps and structs of plain values are passed
	}
	return b
}

func yamlToJSON(b []byte) ([]byte, error) {
	j, err := yaml.YAMLToJSON(b)
	if err != nil {
		return nil, apierrors.Invalid("request body: %v", err)
	}
	return j, nil
}
