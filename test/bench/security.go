package main

import (
	"context"
	"fmt"
	"log"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/apiserver"
	"github.com/kobune/kobune/apiserver/authorizer"
	"github.com/kobune/kobune/apiserver/request"
	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
	"github.com/kobune/kobune/test/overload"
)

// securityBench measures what security costs: pod creates through a
// server with TLS 1.3, client certificates and Node,RBAC — by a user
// allowed by a RoleBinding among 1,000 other roles and bindings, not by
// system:masters — against a plaintext AlwaysAllow server, in alternating
// rounds of the same run; and the RBAC authorizer's decision latency with
// 1,000 roles and bindings.
func securityBench(dir string, creates, rounds int) string {
	secure, err := testserver.StartSecure(filepath.Join(dir, "secure"), testserver.StableAddr(), filepath.Join(dir, "pki"), nil, nil)
	if err != nil {
		log.Fatalf("start secure apiserver: %v", err)
	}
	defer secure.Stop()
	// The same server but for TLS, authentication and RBAC: it issues
	// ServiceAccount tokens too, so its pods get the same token volume.
	plain, err := testserver.Start(filepath.Join(dir, "plain"), "", func(c *apiserver.Config) {
		c.ServiceAccountSigningKeyFile, c.ServiceAccountKeyFiles = filepath.Join(secure.PKIDir, "sa.key"), []string{filepath.Join(secure.PKIDir, "sa.pub")}
	})
	if err != nil {
		log.Fatalf("start apiserver: %v", err)
	}
	defer plain.Stop()
	ctx := context.Background()
	// 1,000 roles and bindings for other users, then the bench user's.
	roles, bindings := client.For[*rbac.Role](secure.Client), client.For[*rbac.RoleBinding](secure.Client)
	for i := range 1000 {
		name := fmt.Sprintf("team-%04d", i)
		if _, err := roles.Create(ctx, &rbac.Role{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			Rules: []rbac.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{name}}}}); err != nil {
			log.Fatal(err)
		}
		if _, err := bindings.Create(ctx, &rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "Role", Name: name}, Subjects: []rbac.Subject{{Kind: rbac.UserKind, Name: "user-" + name}}}); err != nil {
			log.Fatal(err)
		}
	}
	if _, err := bindings.Create(ctx, &rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: "bench-edit"},
		RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: "edit"}, Subjects: []rbac.Subject{{Kind: rbac.UserKind, Name: "bench"}}}); err != nil {
		log.Fatal(err)
	}
	if _, err := client.For[*rbac.Role](secure.Client).Get(ctx, "default", "team-0999"); err != nil {
		log.Fatal(err)
	}
	benchCfg := userConfig(secure, "bench")
	const conc = 16
	plainClients, secureClients := make([]*client.Client, conc), make([]*client.Client, conc)
	for i := range conc {
		if plainClients[i], err = client.New(plain.Addr()); err != nil {
			log.Fatal(err)
		}
		defer plainClients[i].Close()
		if secureClients[i], err = client.NewFromConfig(benchCfg); err != nil {
			log.Fatal(err)
		}
		defer secureClients[i].Close()
	}
	// The bench user's binding reaches the authorizer through a watch.
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err := secureClients[0].API.Create(ctx, &apipb.CreateRequest{Resource: "pods", Namespace: "default", Object: podBytes("warm-up")})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			log.Fatalf("the bench user cannot create pods: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	per := creates / rounds
	stopProfile := startProfile(profileAPI + ".security")
	var plainTime, secureTime time.Duration
	var ratios []float64
	for round := range rounds {
		bodies := func(prefix string) [][]byte {
			b := make([][]byte, per)
			for i := range b {
				b[i] = podBytes(fmt.Sprintf("%s-%d-%d", prefix, round, i))
			}
			return b
		}
		pb, sb := bodies("plain"), bodies("secure")
		p := measure(per, conc, func(w, i int) error {
			_, err := plainClients[w].API.Create(ctx, &apipb.CreateRequest{Resource: "pods", Namespace: "default", Object: pb[i]})
			return err
		})
		s := measure(per, conc, func(w, i int) error {
			_, err := secureClients[w].API.Create(ctx, &apipb.CreateRequest{Resource: "pods", Namespace: "default", Object: sb[i]})
			return err
		})
		plainTime += p
		secureTime += s
		ratios = append(ratios, p.Seconds()/s.Seconds())
	}
	stopProfile()
	plainRate, secureRate := float64(per*rounds)/plainTime.Seconds(), float64(per*rounds)/secureTime.Seconds()
	ratio := secureRate / plainRate
	log.Printf("security: plaintext %.0f creates/s, TLS+authn+RBAC %.0f creates/s (%.0f%%)", plainRate, secureRate, 100*ratio)
	p50, p99, max, n := rbacDecisions()
	log.Printf("RBAC decisions with 1000 roles and bindings: p50 %v p99 %v max %v (%d)", p50, p99, max, n)
	sort.Float64s(ratios)
	var b strings.Builder
	b.WriteString("## What security costs\n\n")
	fmt.Fprintf(&b, "Pod creates (%d clients, %d each side, %d alternating rounds) through two API servers of the same run: one plaintext with every caller anonymous and allowed (AlwaysAllow), otherwise the same (it issues ServiceAccount tokens too, so both add the token volume to every pod), one as the lab runs — TLS 1.3, client-certificate authentication, Node,RBAC authorization, the caller a user allowed by a RoleBinding of `edit` among 1,000 other Roles and RoleBindings (not system:masters, which skips RBAC).\n\n", conc, per*rounds, rounds)
	b.WriteString("| plaintext creates/s | TLS + authn + RBAC creates/s | ratio | goal | ratio per round: lowest / median / highest |\n|---|---|---|---|---|\n")
	fmt.Fprintf(&b, "| %.0f | %.0f | %.0f%% | ≥ 85%% (%s) | %.0f%% / %.0f%% / %.0f%% |\n\n", plainRate, secureRate, 100*ratio, verdict(ratio >= 0.85),
		100*ratios[0], 100*median(ratios), 100*ratios[len(ratios)-1])
	fmt.Fprintf(&b, "RBAC decision latency (the authorizer alone, in-process) with 1,000 Roles and 1,000 RoleBindings in one namespace plus the bootstrap ClusterRoles and bindings: %d decisions for random users, half allowed and half denied.\n\n", n)
	b.WriteString("| p50 | p99 | max |\n|---|---|---|\n")
	fmt.Fprintf(&b, "| %s | %s | %s |\n", p50, p99, max)
	return b.String()
}

func verdict(met bool) string {
	if met {
		return "met"
	}
	return "**missed**"
}

// userConfig is a client config for user, with a certificate of the
// server's CA.
func userConfig(s *testserver.Server, user string) client.Config {
	cfg, err := overload.UserConfig(s, user)
	if err != nil {
		log.Fatal(err)
	}
	return cfg
}

// rbacDecisions times the RBAC authorizer over 1,000 roles and bindings.
func rbacDecisions() (p50, p99, max time.Duration, n int) {
	z := authorizer.NewRBAC()
	for _, r := range authorizer.BootstrapClusterRoles() {
		z.Set(r)
	}
	for _, b := range authorizer.BootstrapClusterRoleBindings() {
		z.Set(b)
	}
	var objs []any
	for i := range 1000 {
		name := fmt.Sprintf("team-%04d", i)
		objs = append(objs, &rbac.Role{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			Rules: []rbac.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{name}}}})
	}
	z.Replace("roles", objs)
	objs = nil
	for i := range 1000 {
		name := fmt.Sprintf("team-%04d", i)
		objs = append(objs, &rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: "default", Name: name},
			RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "Role", Name: name}, Subjects: []rbac.Subject{{Kind: rbac.UserKind, Name: "user-" + name}}})
	}
	z.Replace("rolebindings", objs)
	n = 200000
	lat := make([]time.Duration, n)
	for i := range n {
		u := rand.IntN(1000)
		name := fmt.Sprintf("team-%04d", u)
		if i%2 == 1 {
			name = fmt.Sprintf("team-%04d", (u+1)%1000) // another team's: denied
		}
		user := request.UserInfo{Name: fmt.Sprintf("user-team-%04d", u), Groups: []string{request.AllAuthenticated}}
		a := &request.Attributes{Verb: "get", Resource: "configmaps", Namespace: "default", Name: name}
		start := time.Now()
		d, _ := z.Authorize(user, a)
		lat[i] = time.Since(start)
		if (d == authorizer.Allow) != (i%2 == 0) {
			log.Fatalf("RBAC decided %v for %s on %s", d, user.Name, name)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[n/2], lat[n*99/100], lat[n-1], n
}
