package cmdutil

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/kobune/kobune/api/scheme"
)

// The kinds a command may name: the built-in ones, known without asking,
// and the custom ones a server's CustomResourceDefinitions add, which
// kobectl learns from the server (the Discovery call) the first time a
// name or a manifest's kind is not a built-in one — kubectl's discovery,
// asked only when needed.

// Kinds returns the kinds the server serves, asked once per run; when the
// server cannot be asked, the built-in ones.
func (o *Options) Kinds() *scheme.Kinds {
	if o.kinds != nil {
		return o.kinds
	}
	o.kinds = scheme.NewKinds()
	c, err := o.Client()
	if err != nil {
		return o.kinds
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if kinds, err := c.Discover(ctx); err == nil {
		o.kinds = kinds
	}
	return o.kinds
}

// Lookup finds a kind by name ("pods", "widget", "wd",
// "widgets.example.com"), asking the server when it is not built in.
func (o *Options) Lookup(name string) (*scheme.Kind, error) {
	k, err := scheme.Lookup(name)
	var unknown *scheme.UnknownResourceError
	if errors.As(err, &unknown) {
		return o.Kinds().Lookup(name)
	}
	return k, err
}

// ParseTarget reads "pods", "pods web-1 web-2" or "pod/web-1", custom
// kinds included.
func (o *Options) ParseTarget(args []string) (*scheme.Kind, []string, error) {
	typ, names, err := splitTarget(args)
	if err != nil {
		return nil, nil, err
	}
	k, err := o.Lookup(typ)
	return k, names, err
}

// ReadManifests is ReadManifests, asking the server for the kinds it does
// not know (a custom resource in a manifest).
func (o *Options) ReadManifests(paths []string, stdin io.Reader) ([]Manifest, error) {
	ms, err := readManifests(nil, paths, stdin)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		var unknown *scheme.UnknownKindError
		if errors.As(m.Err, &unknown) {
			return rereadManifests(o.Kinds(), ms), nil
		}
	}
	return ms, nil
}

// rereadManifests decodes again, with kinds, the documents that named a
// kind not known before.
func rereadManifests(kinds *scheme.Kinds, ms []Manifest) []Manifest {
	for i, m := range ms {
		var unknown *scheme.UnknownKindError
		if !errors.As(m.Err, &unknown) || m.JSON == nil {
			continue
		}
		if docs := kinds.DecodeDocument(m.JSON, m.Line); len(docs) == 1 {
			ms[i].Document = docs[0]
		}
	}
	return ms
}
