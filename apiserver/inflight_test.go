package apiserver_test

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/client"
)

// TestInflightLimits (issue #35): one ordinary user could open thousands
// of watches (5,000 took the server from 93 MB to 1.1 GB and 90,000
// goroutines). A user now holds at most --max-watches-per-user watches;
// the next is a 429 with Retry-After, which clients retry, and a closed
// watch makes room again. The administrator (system:masters) is exempt,
// and so are other users' watches. Reads and writes over
// --max-requests-inflight / --max-mutating-requests-inflight are refused
// the same way (TestInflightFilter holds that part).
func TestInflightLimits(t *testing.T) {
	s := startSecured(t, func(c *apiserver.Config) { c.MaxWatchesPerUser = 3 })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, u := range []string{"viewer", "other"} {
		if _, err := client.For[*rbac.RoleBinding](s.Client).Create(ctx, binding("default", u, "ClusterRole", "view", userSubject(u))); err != nil {
			t.Fatal(err)
		}
	}
	watch := func(c *restClient) (*http.Response, func()) {
		t.Helper()
		wctx, stop := context.WithCancel(ctx)
		req, _ := http.NewRequestWithContext(wctx, "GET", c.base+"/api/v1/namespaces/default/configmaps?watch=true", nil)
		resp, err := c.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp, func() { stop(); resp.Body.Close() }
	}
	viewer := newRESTClient(t, s.configAs(t, "viewer"), s.Addr())
	// The bindings reach the authorizer through its watch: wait for them.
	other := newRESTClient(t, s.configAs(t, "other"), s.Addr())
	for _, c := range []*restClient{viewer, other} {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if code, _, _ := c.do("GET", "/api/v1/namespaces/default/configmaps", "", ""); code == 200 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the view binding did not take effect within 10 s")
			}
		}
	}
	viewer.http.Timeout = 0 // watches stay open
	var stops []func()
	defer func() {
		for _, stop := range stops {
			stop()
		}
	}()
	for i := range 3 {
		resp, stop := watch(viewer)
		stops = append(stops, stop)
		if resp.StatusCode != 200 {
			t.Fatalf("watch %d of 3: %d", i+1, resp.StatusCode)
		}
	}
	resp, stop := watch(viewer)
	b, _ := io.ReadAll(resp.Body)
	stop()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a 4th watch of a user allowed 3: %d (Retry-After %q) %s; want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	// Another user, and the administrator, still watch.
	other.http.Timeout = 0
	admin := newRESTClient(t, s.admin, s.Addr())
	admin.http.Timeout = 0
	for name, c := range map[string]*restClient{"another user": other, "the administrator": admin} {
		resp, stop := watch(c)
		stops = append(stops, stop)
		if resp.StatusCode != 200 {
			t.Errorf("%s's watch while viewer is at its limit: %d", name, resp.StatusCode)
		}
	}
	// A closed watch makes room again.
	stops[0]()
	var code int
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, stop := watch(viewer)
		code = resp.StatusCode
		stops = append(stops, stop)
		if code == 200 {
			break
		}
	}
	if code != 200 {
		t.Errorf("after one of viewer's watches closed, a new one: %d; want 200", code)
	}
}
