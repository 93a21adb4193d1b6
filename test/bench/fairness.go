package main

import (
	"context"
	"fmt"
	"log"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
	"github.com/kobune/kobune/test/overload"
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
		if err := overload.Bind(ctx, s, "default", "alice", "edit"); err != nil {
			log.Fatal(err)
		}
	}
	const conc = 16
	clients := func(s *testserver.Server, user string, n int) []*client.Client {
		cs := make([]*client.Client, n)
		for i := range cs {
			if cs[i], err = client.NewFromConfig(userConfig(s, user)); err != nil {
				log.Fatal(err)
			}
		}
		if err := overload.WaitAllowed(ctx, cs[0], "default"); err != nil {
			log.Fatal(err)
		}
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
		r, err := overload.Run(ctx, overload.Attack{Server: side.s, Objects: objects, Watches: watches, Lists: lists, Duration: attack,
			Attacker: "mallory", Victim: "alice", Logf: log.Printf})
		if err != nil {
			log.Fatalf("fairness under attack, %s: %v", side.name, err)
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %d | %d | %d | %.0f MiB |\n", side.name, r.Creates, r.P50, r.P99, r.Max, r.Refused, r.Lists, r.ListsRefused, mib(r.PeakRSS))
		log.Printf("fairness under attack, %s: alice p50 %s p99 %s (%d creates), mallory %d lists (%d refused), peak RSS %.0f MiB", side.name, r.P50, r.P99, r.Creates, r.Lists, r.ListsRefused, mib(r.PeakRSS))
	}
	b.WriteString("\nGoal (issue 35): with Priority and Fairness, alice's p99 under 1 s.\n")
	return b.String()
}
