package client_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
)

// TestModifyRetriesOnConflict: writers racing to change one object each
// get their change in (none is lost to a conflict), and a change that
// refuses writes nothing.
func TestModifyRetriesOnConflict(t *testing.T) {
	s := testserver.New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cms := client.For[*core.ConfigMap](s.Client)
	if _, err := cms.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "counter"},
		Data: map[string]string{"n": "0"}}); err != nil {
		t.Fatal(err)
	}
	const writers = 4
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := cms.Modify(ctx, "default", "counter", func(cm *core.ConfigMap) error {
				n, _ := strconv.Atoi(cm.Data["n"])
				cm.Data["n"] = strconv.Itoa(n + 1)
				return nil
			})
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a writer failed: %v", err)
		}
	}
	cm, err := cms.Get(ctx, "default", "counter")
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["n"] != strconv.Itoa(writers) {
		t.Errorf("n = %s after %d writers: a change was lost", cm.Data["n"], writers)
	}
	refused := errors.New("no")
	if _, err := cms.Modify(ctx, "default", "counter", func(cm *core.ConfigMap) error {
		cm.Data["n"] = "changed"
		return refused
	}); !errors.Is(err, refused) {
		t.Errorf("a refusing change returned %v", err)
	}
	if after, _ := cms.Get(ctx, "default", "counter"); after.ResourceVersion != cm.ResourceVersion {
		t.Error("a refusing change was written")
	}
}
