package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// fairnessBench measures API Priority and Fairness (issue 35): what it
// costs a create, against a server of the same run without it and
// without in-flight limits; and what it protects, a second user's
// creates while one view user holds thousands of watches and runs
// hundreds of unpaginated lists of thousands of ConfigMaps, with it and
// without it.
func fairnessBench(dir string, creates, rounds, objects, watches, lists int, attack time.Duration) string {
	on, err := testserver.StartSecure(filepath.Join(dir, "fairness-on"), testserver.StableAddr(), filepath.Join(dir, "fairness-on-pki"), nil, nil)
	if err != nil {
		log.Fatalf("start apiserver: %v", err)
	}
	defer on.Stop()
	off, err := testserver.StartSecure(filepath.Join(dir, "fairness-off"), testserver.StableAddr(), filepath.Join(dir, "fairness-off-pki"), nil, nil, func(c *apiserver.Config) {
		c.DisablePriorityAndFairness, c.MaxRequestsInflight, c.MaxMutatingRequestsInflight = true, -1, -1
	})
	if err != nil {
		log.Fatalf("start apiserver: %v", err)
	}
	defer off.Stop()
	ctx := context.Background()
	for _, s := range []*testserver.Server{on, off} {
		bind(ctx, s, "alice", "edit")
		bind(ctx, s, "mallory", "view")
	}
	const conc = 16
	clients := func(s *testserver.Server, user string, n int) []*client.Client {
		cs := make([]*client.Client, n)
		for i := range cs {
			if cs[i], err = client.NewFromConfig(userConfig(s, user)); err != nil {
				log.Fatal(err)
			}
		}
		waitAllowed(ctx, cs[0])
		return cs
	}
	onClients, offClients := clients(on, "alice", conc), clients(off, "alice", conc)
	per := creates / rounds
	var onTime, offTime time.Duration
	var ratios []float64
	for round := range rounds {
		create := func(cs []*client.Client, prefix string) time.Duration {
			return measure(per, conc, func(w, i int) error {
				_, err := cs[w].API.Create(ctx, &apipb.CreateRequest{Resource: "pods", Namespace: "default", Object: podBytes(fmt.Sprintf("%s-%d-%d", prefix, round, i))})
				return err
			})
		}
		o, f := create(offClients, "off"), create(onClients, "on")
		offTime += o
		onTime += f
		ratios = append(ratios, o.Seconds()/f.Seconds())
	}
	onRate, offRate := float64(per*rounds)/onTime.Seconds(), float64(per*rounds)/offTime.Seconds()
	ratio := onRate / offRate
	log.Printf("fairness: creates/s with Priority and Fairness %.0f, without it and without limits %.0f (%.0f%%)", onRate, offRate, 100*ratio)
	slices.Sort(ratios)

	var b strings.Builder
	b.WriteString("## What Priority and Fairness costs and protects\n\n")
	fmt.Fprintf(&b, "Pod creates (%d clients of one user bound to `edit`, %d each side, %d alternating rounds) through two API servers of the same run, both secured as the lab runs them: one with API Priority and Fairness (the default: the user's requests are classified by the FlowSchemas, flow `global-default`, and take a seat of that level), one with `--enable-priority-and-fairness=false` and both in-flight limits off.\n\n", conc, per*rounds, rounds)
	b.WriteString("| without creates/s | with creates/s | ratio | goal | ratio per round: lowest / median / highest |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %.0f | %.0f | %.0f%% | ≥ 95%% (%s) | %.0f%% / %.0f%% / %.0f%% |\n\n", offRate, onRate, 100*ratio, verdict(ratio >= 0.95),
		100*ratios[0], 100*median(ratios), 100*ratios[len(ratios)-1])

	fmt.Fprintf(&b, "Under attack: %d ConfigMaps of 1 KiB in one namespace; one `view` user (mallory) opens %d watches and runs %d unpaginated lists of them at a time, over and over, for %s; meanwhile a second user (alice, `edit`) creates ConfigMaps one after another. Each server alone in turn; mallory speaks REST and throws the bodies away, so the bench process's RSS (its peak during the attack) is the server's plus little.\n\n", objects, watches, lists, attack)
	b.WriteString("| server | alice's creates | p50 | p99 | max | alice refused | mallory's lists done | mallory's lists refused (429) | peak RSS |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, side := range []struct {
		name string
		s    *testserver.Server
	}{{"with Priority and Fairness", on}, {"without (no limits)", off}} {
		r := underAttack(ctx, side.s, objects, watches, lists, attack)
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d | %d | %d | %.0f MiB |\n", side.name, r.creates, r.p50, r.p99, r.max, r.refused, r.lists, r.listRefused, mib(r.peakRSS))
		log.Printf("fairness under attack, %s: alice p50 %s p99 %s (%d creates), mallory %d lists (%d refused), peak RSS %.0f MiB", side.name, r.p50, r.p99, r.creates, r.lists, r.listRefused, mib(r.peakRSS))
	}
	b.WriteString("\nGoal (issue 35): with Priority and Fairness, alice's p99 under 1 s.\n")
	return b.String()
}

func bind(ctx context.Context, s *testserver.Server, user, role string) {
	bindIn(ctx, s, "default", user, role)
}

// waitAllowed waits until the client's binding has reached the
// authorizer (through its watch).
func waitAllowed(ctx context.Context, c *client.Client) {
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := c.API.List(ctx, &apipb.ListRequest{Resource: "configmaps", Namespace: "default", Limit: 1}); err == nil {
			return
		} else if time.Now().After(deadline) {
			log.Fatalf("the bench user cannot list ConfigMaps: %v", err)
		}
	}
}

type attackResult struct {
	creates, refused, lists, listRefused int
	p50, p99, max                        time.Duration
	peakRSS                              uint64
}

func underAttack(ctx context.Context, s *testserver.Server, objects, watches, lists int, d time.Duration) attackResult {
	debug.FreeOSMemory() // what the other side left
	data := strings.Repeat("x", 1024)
	admin := s.Client
	existing, _ := admin.API.List(ctx, &apipb.ListRequest{Resource: "configmaps", Namespace: "attack", Limit: 1})
	if existing == nil || len(existing.Items) == 0 {
		if _, err := admin.API.Create(ctx, &apipb.CreateRequest{Resource: "namespaces", Object: []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"attack"}}`)}); err != nil {
			log.Fatal(err)
		}
		measure(objects, 16, func(_, i int) error {
			_, err := admin.API.Create(ctx, &apipb.CreateRequest{Resource: "configmaps", Namespace: "attack",
				Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-` + strconv.Itoa(i) + `"},"data":{"d":"` + data + `"}}`)})
			return err
		})
	}
	bindIn(ctx, s, "attack", "mallory", "view")
	// mallory speaks REST, as kubectl does, and throws the bodies away:
	// what the process holds is the server's.
	mcfg := userConfig(s, "mallory")
	tc, err := client.TLSConfig(mcfg, s.Addr())
	if err != nil {
		log.Fatal(err)
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
		req, _ := http.NewRequestWithContext(ctx, "GET", "https://"+s.Addr()+path, nil)
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	alice, err := client.NewFromConfig(userConfig(s, "alice"))
	if err != nil {
		log.Fatal(err)
	}
	defer alice.Close()
	waitAllowed(ctx, alice)
	actx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	// spawn runs n of mallory's loops, 200 to a connection.
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
	spawn(watches, func(c *http.Client) {
		get(c, actx, "/api/v1/namespaces/attack/configmaps?watch=true") // until the attack ends (or a 429)
	})
	var done, refused atomic.Int64
	spawn(lists, func(c *http.Client) {
		for actx.Err() == nil {
			code, err := get(c, actx, "/api/v1/namespaces/attack/configmaps")
			switch {
			case err == nil && code == 200:
				done.Add(1)
			case actx.Err() == nil:
				if refused.Add(1) == 1 {
					log.Printf("fairness: mallory's first refused list: %d %v", code, err)
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
			if r := rss(); r > peak.Load() {
				peak.Store(r)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	time.Sleep(2 * time.Second) // the attack under way
	var lat []time.Duration
	aliceRefused := 0
	for i, end := 0, time.Now().Add(d); time.Now().Before(end); i++ {
		start := time.Now()
		_, err := alice.API.Create(ctx, &apipb.CreateRequest{Resource: "configmaps", Namespace: "default",
			Object: []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"victim-%d-%d"}}`, time.Now().UnixNano(), i))})
		if err != nil {
			if aliceRefused++; aliceRefused == 1 {
				log.Printf("fairness: alice's first refused create: %v", err)
			}
			continue
		}
		lat = append(lat, time.Since(start))
	}
	stop()
	wg.Wait()
	slices.Sort(lat)
	r := attackResult{creates: len(lat), refused: aliceRefused, lists: int(done.Load()), listRefused: int(refused.Load()), peakRSS: peak.Load()}
	if len(lat) > 0 {
		r.p50, r.p99, r.max = lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1]
	}
	return r
}

func bindIn(ctx context.Context, s *testserver.Server, ns, user, role string) {
	if _, err := client.For[*rbac.RoleBinding](s.Client).Create(ctx, &rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: ns, Name: user},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: role}, Subjects: []rbac.Subject{{Kind: rbac.UserKind, Name: user}}}); err != nil && !client.IsAlreadyExists(err) {
		log.Fatal(err)
	}
}

// rss is the process's resident set size.
func rss() uint64 {
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
