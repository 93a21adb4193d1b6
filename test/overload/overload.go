// Package overload is the hostile load of issue 35, in one place for the
// fairness benchmark (test/bench, `make bench`) and the end-to-end
// fairness test (test/e2e): one user bound to `view` holds thousands of
// REST watches and runs hundreds of unpaginated lists of thousands of
// ConfigMaps at a time, while a second user creates ConfigMaps one after
// another and each create is timed. It mirrors what Kubernetes' API
// Priority and Fairness is there for (k8s.io/apiserver's flowcontrol): one
// client must not starve the others.
package overload

import (
	"context"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/client/pki"
	"github.com/kobune/kobune/proto/apipb"
)

// Attack is what the attacker does, and to which server.
type Attack struct {
	Server *testserver.Server
	// Objects ConfigMaps of 1 KiB in the namespace "attack" (created
	// once, by the administrator), Watches watches of them and Lists
	// unpaginated lists of them at a time, for Duration after a 2-second
	// start.
	Objects, Watches, Lists int
	Duration                time.Duration
	// Attacker (bound to `view` in "attack") and Victim (who must be
	// allowed to create ConfigMaps in "default").
	Attacker, Victim string
	Logf             func(string, ...any)
}

// Result is what the victim and the attacker got.
type Result struct {
	Creates, Refused       int // the victim's creates done and refused
	Lists, ListsRefused    int // the attacker's lists done and refused
	P50, P99, Max          time.Duration
	BaseRSS, PeakRSS       uint64 // this process's, before and at most during the attack
	FirstRefusal, Attacker string
}

// Run creates what is missing and runs the attack.
func Run(ctx context.Context, a Attack) (Result, error) {
	debug.FreeOSMemory() // what earlier work left
	logf := a.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	data := strings.Repeat("x", 1024)
	admin := a.Server.Client
	existing, _ := admin.API.List(ctx, &apipb.ListRequest{Resource: "configmaps", Namespace: "attack", Limit: 1})
	if existing == nil || len(existing.Items) == 0 {
		if _, err := admin.API.Create(ctx, &apipb.CreateRequest{Resource: "namespaces", Object: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"attack"}}`)}); err != nil && !client.IsAlreadyExists(err) {
			return Result{}, err
		}
		if err := parallel(a.Objects, 16, func(i int) error {
			_, err := admin.API.Create(ctx, &apipb.CreateRequest{Resource: "configmaps", Namespace: "attack",
				Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-` + strconv.Itoa(i) + `"},"data":{"d":"` + data + `"}}`)})
			if client.IsAlreadyExists(err) {
				return nil
			}
			return err
		}); err != nil {
			return Result{}, fmt.Errorf("create the attack's ConfigMaps: %w", err)
		}
	}
	if err := Bind(ctx, a.Server, "attack", a.Attacker, "view"); err != nil {
		return Result{}, err
	}
	// The attacker speaks REST, as kubectl does, and throws the bodies
	// away: what the process holds is the server's.
	mcfg, err := UserConfig(a.Server, a.Attacker)
	if err != nil {
		return Result{}, err
	}
	tc, err := client.TLSConfig(mcfg, a.Server.Addr())
	if err != nil {
		return Result{}, err
	}
	tc.NextProtos = []string{"h2", "http/1.1"}
	// One HTTP/2 connection per 200 requests at a time, as a client
	// library keeps them (the server takes 250 streams per connection):
	// what is measured is the API server, not thousands of handshakes.
	conn := func() *http.Client {
		return &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true, MaxConnsPerHost: 1}}
	}
	var conns []*http.Client
	defer func() {
		for _, c := range conns {
			c.CloseIdleConnections()
		}
	}()
	get := func(c *http.Client, ctx context.Context, path string) (int, error) {
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+a.Server.Addr()+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	vcfg, err := UserConfig(a.Server, a.Victim)
	if err != nil {
		return Result{}, err
	}
	victim, err := client.NewFromConfig(vcfg)
	if err != nil {
		return Result{}, err
	}
	defer victim.Close()
	if err := WaitAllowed(ctx, victim, "default"); err != nil {
		return Result{}, err
	}
	r := Result{BaseRSS: RSS()}
	actx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	// spawn runs n of the attacker's loops, 200 to a connection.
	spawn := func(n int, loop func(c *http.Client)) {
		for i := range n {
			if i%200 == 0 {
				conns = append(conns, conn())
			}
			c := conns[len(conns)-1]
			wg.Add(1)
			go func() { defer wg.Done(); loop(c) }()
		}
	}
	spawn(a.Watches, func(c *http.Client) {
		_, _ = get(c, actx, "/api/v1/namespaces/attack/configmaps?watch=true") // until the attack ends (or a 429)
	})
	var done, refused atomic.Int64
	spawn(a.Lists, func(c *http.Client) {
		for actx.Err() == nil {
			code, err := get(c, actx, "/api/v1/namespaces/attack/configmaps")
			switch {
			case err == nil && code == 200:
				done.Add(1)
			case actx.Err() == nil:
				if refused.Add(1) == 1 {
					logf("overload: the attacker's first refused list: %d %v", code, err)
				}
				time.Sleep(time.Second) // Retry-After
			}
		}
	})
	var peak atomic.Uint64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for actx.Err() == nil {
			if r := RSS(); r > peak.Load() {
				peak.Store(r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	time.Sleep(2 * time.Second) // the attack under way
	var lat []time.Duration
	for i, end := 0, time.Now().Add(a.Duration); time.Now().Before(end) && ctx.Err() == nil; i++ {
		start := time.Now()
		_, err := victim.API.Create(ctx, &apipb.CreateRequest{Resource: "configmaps", Namespace: "default",
			Object: []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim-%d-%d"}}`, time.Now().UnixNano(), i))})
		if err != nil {
			if r.Refused++; r.Refused == 1 {
				r.FirstRefusal = err.Error()
				logf("overload: the victim's first refused create: %v", err)
			}
			continue
		}
		lat = append(lat, time.Since(start))
	}
	stop()
	wg.Wait()
	slices.Sort(lat)
	r.Creates, r.Lists, r.ListsRefused, r.PeakRSS = len(lat), int(done.Load()), int(refused.Load()), peak.Load()
	if len(lat) > 0 {
		r.P50, r.P99, r.Max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return r, nil
}

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var first atomic.Value
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1) - 1); i < n && first.Load() == nil; i = int(next.Add(1) - 1) {
				if err := f(i); err != nil {
					first.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		return err
	}
	return nil
}

// Bind binds user to the ClusterRole role in namespace ns.
func Bind(ctx context.Context, s *testserver.Server, ns, user, role string) error {
	_, err := client.For[*rbac.RoleBinding](s.Client).Create(ctx, &rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: user + "-" + role},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbac.Subject{{Kind: rbac.UserKind, Name: user}}})
	if client.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// WaitAllowed waits until c may list ConfigMaps in ns: a binding reaches
// the authorizer through its watch.
func WaitAllowed(ctx context.Context, c *client.Client, ns string) error {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		_, err := c.API.List(ctx, &apipb.ListRequest{Resource: "configmaps", Namespace: ns, Limit: 1})
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the user cannot list ConfigMaps in %s: %w", ns, err)
		}
	}
}

// UserConfig is a client config for user, with a client certificate of
// the server's CA.
func UserConfig(s *testserver.Server, user string) (client.Config, error) {
	cfg, err := client.LoadKubeconfig(s.Kubeconfig("admin"), "")
	if err != nil {
		return cfg, err
	}
	ca, key, err := pki.LoadCA(s.PKIDir)
	if err != nil {
		return cfg, err
	}
	cfg.Cert, cfg.Key, err = pki.Issue(ca, key, &x509.Certificate{Subject: pkix.Name{CommonName: user}, NotBefore: time.Now().Add(-time.Minute),
		NotAfter: time.Now().Add(24 * time.Hour), KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return cfg, err
}

// RSS is this process's resident set size.
func RSS() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
