package filters_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/kobune/kobune/apiserver/filters"
	"github.com/kobune/kobune/proto/apipb"
)

// TestChainRunsFiltersInOrder: a call passes the filters outermost first,
// a filter that refuses stops it before the handler, and WhenReached
// fires only for a call that reached the handler.
func TestChainRunsFiltersInOrder(t *testing.T) {
	var ran []string
	step := func(name string, refuse bool) filters.Filter {
		return filters.Filter{Name: name, Run: func(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
			ran = append(ran, name)
			if refuse && c.Method == "Delete" {
				return nil, errors.New(name + " refused")
			}
			return next(ctx, c)
		}}
	}
	reached := 0
	watcher := filters.Filter{Name: "watcher", Run: func(ctx context.Context, c *filters.Call, next filters.Handler) (any, error) {
		return next(filters.WhenReached(ctx, func() { reached++ }), c)
	}}
	ch := filters.New(step("first", false), watcher, step("second", true), step("third", false))
	if got := ch.Names(); !slices.Equal(got, []string{"first", "watcher", "second", "third"}) {
		t.Errorf("names %v", got)
	}

	handled := 0
	get := func(ctx context.Context, req *apipb.GetRequest) (*apipb.ObjectResponse, error) {
		handled++
		return &apipb.ObjectResponse{Object: []byte(req.Name)}, nil
	}
	resp, err := filters.Unary(context.Background(), ch, "Get", &apipb.GetRequest{Name: "a"}, get)
	if err != nil || string(resp.Object) != "a" || handled != 1 || reached != 1 {
		t.Fatalf("Get: %v %v, handled %d, reached %d", resp, err, handled, reached)
	}
	if !slices.Equal(ran, []string{"first", "second", "third"}) {
		t.Errorf("order %v", ran)
	}

	ran = nil
	del := func(ctx context.Context, req *apipb.DeleteRequest) (*apipb.ObjectResponse, error) {
		handled++
		return &apipb.ObjectResponse{}, nil
	}
	if _, err := filters.Unary(context.Background(), ch, "Delete", &apipb.DeleteRequest{Name: "a"}, del); err == nil || err.Error() != "second refused" {
		t.Errorf("Delete: %v", err)
	}
	if handled != 1 || reached != 1 || !slices.Equal(ran, []string{"first", "second"}) {
		t.Errorf("a refused call went on: handled %d, reached %d, ran %v", handled, reached, ran)
	}

	streamed := false
	if err := filters.Stream(context.Background(), ch, "Watch", &apipb.WatchRequest{}, func(context.Context) error { streamed = true; return nil }); err != nil || !streamed || reached != 2 {
		t.Errorf("Watch: %v, streamed %v, reached %d", err, streamed, reached)
	}
}
