package cmdutil

import (
	"context"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
)

// Fetch gets the named objects of kind k, or lists them by the label and
// field selectors (returning the list's revision, for a watch).
func Fetch(ctx context.Context, c *client.Client, k *scheme.Kind, ns string, names []string, labelSelector, fieldSelector string) ([]meta.Object, int64, error) {
	var objs []meta.Object
	if len(names) > 0 {
		for _, n := range names {
			b, err := c.Resource(k).Get(ctx, ns, n)
			if err != nil {
				return nil, 0, err
			}
			obj, err := k.Decode(b)
			if err != nil {
				return nil, 0, err
			}
			objs = append(objs, obj)
		}
		return objs, 0, nil
	}
	items, rev, err := c.Resource(k).List(ctx, ns, client.ListOptions{LabelSelector: labelSelector, FieldSelector: fieldSelector})
	if err != nil {
		return nil, 0, err
	}
	for _, b := range items {
		obj, err := k.Decode(b)
		if err != nil {
			return nil, 0, err
		}
		objs = append(objs, obj)
	}
	return objs, rev, nil
}
