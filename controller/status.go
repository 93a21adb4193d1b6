package controller

import (
	"context"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
)

// WriteStatus writes obj — a copy of the cached object carrying the new
// status — through the status subresource, as every controller ends its
// pass. An object deleted meanwhile is not an error (there is nothing left
// to report on): gone says so.
func WriteStatus[T meta.Object](ctx context.Context, c *client.Client, obj T) (gone bool, err error) {
	_, err = client.For[T](c).UpdateStatus(ctx, obj)
	if client.IsNotFound(err) {
		return true, nil
	}
	return false, err
}
