package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kobune/kobune/apiserver/testserver"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// customBench measures what custom resources and dynamic admission cost
// (issue #36), in alternating rounds of one run, 16 clients over gRPC:
//
//   - ConfigMap creates on a plain API server beside the same creates on
//     a server that has CustomResourceDefinitions, a webhook configuration,
//     a ValidatingAdmissionPolicy and a MutatingAdmissionPolicy that do
//     not match them (what the machinery costs a built-in kind that does
//     not use it: goal ≥ 95 %);
//   - custom-resource creates of the same size on that server, without
//     and with CEL validation rules, beside its ConfigMap creates;
//   - ConfigMap creates in a namespace a no-op validating webhook (TLS, in
//     this process) is called for, and with one client the time a create
//     takes with and without it: the webhook's round trip.
func customBench(dir string, creates, rounds int) string {
	plain, err := testserver.Start(filepath.Join(dir, "custom-plain"), "")
	if err != nil {
		log.Fatalf("start apiserver: %v", err)
	}
	defer plain.Stop()
	ext, err := testserver.Start(filepath.Join(dir, "custom-ext"), "")
	if err != nil {
		log.Fatalf("start apiserver: %v", err)
	}
	defer ext.Stop()
	ctx := context.Background()

	var calls atomic.Int64
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review struct {
			Request struct {
				UID string `json:"uid"`
			} `json:"request"`
		}
		b, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(b, &review); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		calls.Add(1)
		fmt.Fprintf(w, `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, review.Request.UID)
	}))
	defer hook.Close()
	caBundle := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))

	create := func(c *client.Client, resource, ns, body string) {
		if _, err := c.API.Create(ctx, &apipb.CreateRequest{Resource: resource, Namespace: ns, Object: []byte(body)}); err != nil {
			log.Fatalf("create %s: %v", resource, err)
		}
	}
	create(ext.Client, "namespaces", "", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"hooked","labels":{"webhook":"on"}}}`)
	create(ext.Client, "customresourcedefinitions", "", widgetCRD("widgets", "Widget", ""))
	create(ext.Client, "customresourcedefinitions", "", widgetCRD("checkedwidgets", "CheckedWidget",
		`,"x-kubernetes-validations":[{"rule":"self.domain.endsWith('.example.com')","message":"the domain must be under example.com"},`+
			`{"rule":"self.replicas <= self.maxReplicas","message":"replicas above maxReplicas"},`+
			`{"rule":"self.tags.all(t, t.size() <= 32)","message":"a tag is too long"}]`))
	create(ext.Client, "validatingwebhookconfigurations", "", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingWebhookConfiguration","metadata":{"name":"bench-noop"},"webhooks":[{"name":"noop.bench.kobune.io",`+
		`"clientConfig":{"url":"`+hook.URL+`/","caBundle":"`+caBundle+`"},"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],`+
		`"namespaceSelector":{"matchLabels":{"webhook":"on"}},"sideEffects":"None","admissionReviewVersions":["v1"]}]}`)
	create(ext.Client, "validatingadmissionpolicies", "", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"bench-replicas"},`+
		`"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"operations":["CREATE","UPDATE"],"apiGroups":["apps"],"apiVersions":["v1"],"resources":["deployments"]}]},`+
		`"validations":[{"expression":"object.spec.replicas <= 50"}]}}`)
	create(ext.Client, "validatingadmissionpolicybindings", "", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"bench-replicas"},`+
		`"spec":{"policyName":"bench-replicas","validationActions":["Deny"]}}`)
	create(ext.Client, "mutatingadmissionpolicies", "", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicy","metadata":{"name":"bench-annotate"},`+
		`"spec":{"failurePolicy":"Fail","reinvocationPolicy":"Never","matchConstraints":{"resourceRules":[{"operations":["CREATE"],"apiGroups":["apps"],"apiVersions":["v1"],"resources":["deployments"]}]},`+
		`"mutations":[{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{annotations: {\"bench\": \"yes\"}}}"}}]}}`)
	create(ext.Client, "mutatingadmissionpolicybindings", "", `{"apiVersion":"admissionregistration.k8s.io/v1","kind":"MutatingAdmissionPolicyBinding","metadata":{"name":"bench-annotate"},`+
		`"spec":{"policyName":"bench-annotate"}}`)
	// The definitions are served once Established; the webhook once the
	// server follows its configuration: wait for both.
	deadline := time.Now().Add(30 * time.Second)
	for _, r := range []string{"widgets.bench.kobune.io", "checkedwidgets.bench.kobune.io"} {
		for {
			_, err := ext.Client.API.Create(ctx, &apipb.CreateRequest{Resource: r, Namespace: "default", Object: widgetBytes(r, "probe", "")})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				log.Fatalf("%s not served within 30 s: %v", r, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	for i := 0; calls.Load() == 0; i++ {
		if time.Now().After(deadline) {
			log.Fatal("the no-op webhook was not called within 30 s")
		}
		create(ext.Client, "configmaps", "hooked", string(configMapBytes(fmt.Sprintf("probe-%d", i), "hooked")))
		time.Sleep(100 * time.Millisecond)
	}

	const conc = 16
	clients := func(s *testserver.Server) []*client.Client {
		cs := make([]*client.Client, conc)
		for i := range cs {
			if cs[i], err = client.New(s.Addr()); err != nil {
				log.Fatal(err)
			}
		}
		return cs
	}
	pc, ec := clients(plain), clients(ext)
	defer func() {
		for i := range conc {
			pc[i].Close()
			ec[i].Close()
		}
	}()

	type side struct {
		name          string
		clients       []*client.Client
		resource, ns  string
		body          func(name string) []byte
		time          time.Duration
		perRoundRatio []float64 // against the plain server's ConfigMaps
	}
	sides := []*side{
		{name: "ConfigMap, plain server", clients: pc, resource: "configmaps", ns: "default", body: func(n string) []byte { return configMapBytes(n, "default") }},
		{name: "ConfigMap, with the machinery", clients: ec, resource: "configmaps", ns: "default", body: func(n string) []byte { return configMapBytes(n, "default") }},
		{name: "custom resource", clients: ec, resource: "widgets.bench.kobune.io", ns: "default", body: func(n string) []byte { return widgetBytes("widgets", n, "") }},
		{name: "custom resource, 3 CEL rules", clients: ec, resource: "checkedwidgets.bench.kobune.io", ns: "default", body: func(n string) []byte { return widgetBytes("checkedwidgets", n, "") }},
		{name: "ConfigMap, a no-op webhook", clients: ec, resource: "configmaps", ns: "hooked", body: func(n string) []byte { return configMapBytes(n, "hooked") }},
	}
	per := creates / rounds
	// One client: how long a create takes with and without the webhook.
	lone := max(per/8, 10)
	var without, with time.Duration
	for round := range rounds {
		var base time.Duration
		for i, s := range sides {
			bodies := make([][]byte, per)
			for j := range bodies {
				bodies[j] = s.body(fmt.Sprintf("s%d-%d-%d", i, round, j))
			}
			d := measure(per, conc, func(w, j int) error {
				_, err := s.clients[w].API.Create(ctx, &apipb.CreateRequest{Resource: s.resource, Namespace: s.ns, Object: bodies[j]})
				return err
			})
			if i == 0 {
				base = d
			}
			s.time += d
			s.perRoundRatio = append(s.perRoundRatio, base.Seconds()/d.Seconds())
		}
		for k, ns := range []string{"default", "hooked"} {
			d := measure(lone, 1, func(_, j int) error {
				_, err := ec[0].API.Create(ctx, &apipb.CreateRequest{Resource: "configmaps", Namespace: ns, Object: configMapBytes(fmt.Sprintf("lone-%d-%d", round, j), ns)})
				return err
			})
			if k == 0 {
				without += d
			} else {
				with += d
			}
		}
	}
	n := float64(per * rounds)
	rate := func(s *side) float64 { return n / s.time.Seconds() }
	baseRate := rate(sides[0])
	builtinExt := rate(sides[1])
	tripMs := (with.Seconds() - without.Seconds()) / float64(lone*rounds) * 1000
	log.Printf("custom resources: %s", func() string {
		var parts []string
		for _, s := range sides {
			parts = append(parts, fmt.Sprintf("%s %.0f/s", s.name, rate(s)))
		}
		return strings.Join(parts, ", ")
	}())
	log.Printf("webhook round trip: %.2f ms per create (one client: %.2f ms without, %.2f ms with)", tripMs,
		without.Seconds()/float64(lone*rounds)*1000, with.Seconds()/float64(lone*rounds)*1000)

	var b strings.Builder
	b.WriteString("## Custom resources and dynamic admission\n\n")
	fmt.Fprintf(&b, "Creates over gRPC, %d clients, %d objects per row in %d alternating rounds (every row in each round), objects of %d bytes of JSON (a ConfigMap) and %d (a custom resource). "+
		"Two API servers of the same run: a plain one, and one with two CustomResourceDefinitions (`widgets` with a structural schema, `checkedwidgets` the same with 3 CEL rules), "+
		"a ValidatingWebhookConfiguration for ConfigMaps in namespaces labelled `webhook=on` (a no-op webhook over TLS in the benchmark's process), and a ValidatingAdmissionPolicy and a MutatingAdmissionPolicy, each with its binding, for Deployments. "+
		"Each ratio is against the plain server's ConfigMap creates; the second server's etcd holds four times as many objects by the end.\n\n",
		conc, per*rounds, rounds, len(configMapBytes("s0-0-0", "default")), len(widgetBytes("widgets", "s2-0-0", "")))
	b.WriteString("| creates | per second | against ConfigMaps on the plain server | per round: lowest / median / highest |\n|---|---|---|---|\n")
	for _, s := range sides {
		r := s.perRoundRatio
		sorted := append([]float64(nil), r...)
		sort.Float64s(sorted)
		fmt.Fprintf(&b, "| %s | %.0f | %.0f%% | %.0f%% / %.0f%% / %.0f%% |\n", s.name, rate(s), 100*rate(s)/baseRate, 100*sorted[0], 100*median(sorted), 100*sorted[len(sorted)-1])
	}
	fmt.Fprintf(&b, "\nBuilt-in creates on the server with definitions, a webhook configuration and policies that do not match them: %.0f%% of the plain server's (goal ≥ 95%%: %s). "+
		"Custom resources: %.0f%% of the same server's ConfigMap creates; with 3 CEL rules %.0f%% of those without.\n\n",
		100*builtinExt/baseRate, verdict(builtinExt/baseRate >= 0.95), 100*rate(sides[2])/builtinExt, 100*rate(sides[3])/rate(sides[2]))
	fmt.Fprintf(&b, "The webhook's round trip, one client, %d creates each way: %.2f ms per create without it, %.2f ms with it, %.2f ms added (an AdmissionReview over a kept-alive TLS connection on loopback; the webhook answers at once).\n",
		lone*rounds, without.Seconds()/float64(lone*rounds)*1000, with.Seconds()/float64(lone*rounds)*1000, tripMs)
	return b.String()
}

// configMapBytes is a ConfigMap of about the size of podBytes' pod.
func configMapBytes(name, ns string) []byte {
	return []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":%q,"labels":{"app":"bench","tier":"backend"},"annotations":{"kobune.io/bench":%q}},`+
		`"data":{"domain":"shop.example.com","replicas":"3","maxReplicas":"10","image":"kobune.local/labapp:1.0","tags":"web,shop,production,eu","notes":%q}}`,
		name, ns, strings.Repeat("x", 200), strings.Repeat("n", 800)))
}

// widgetBytes is a custom resource of kind plural (widgets or
// checkedwidgets) with the same content as configMapBytes' data.
func widgetBytes(plural, name, ns string) []byte {
	kind := map[string]string{"widgets": "Widget", "checkedwidgets": "CheckedWidget"}[strings.Split(plural, ".")[0]]
	if ns == "" {
		ns = "default"
	}
	return []byte(fmt.Sprintf(`{"apiVersion":"bench.kobune.io/v1","kind":%q,"metadata":{"name":%q,"namespace":%q,"labels":{"app":"bench","tier":"backend"},"annotations":{"kobune.io/bench":%q}},`+
		`"spec":{"domain":"shop.example.com","replicas":3,"maxReplicas":10,"image":"kobune.local/labapp:1.0","tags":["web","shop","production","eu"],"notes":%q}}`,
		kind, name, ns, strings.Repeat("x", 200), strings.Repeat("n", 800)))
}

// widgetCRD is a namespaced definition bench.kobune.io/v1 of plural and
// kind; rules are extra JSON on the spec's schema (CEL rules).
func widgetCRD(plural, kind, rules string) string {
	return `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + plural + `.bench.kobune.io"},` +
		`"spec":{"group":"bench.kobune.io","scope":"Namespaced","names":{"plural":"` + plural + `","kind":"` + kind + `"},` +
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["domain"],` +
		`"properties":{"domain":{"type":"string","maxLength":253},"replicas":{"type":"integer","minimum":0},"maxReplicas":{"type":"integer","minimum":0},` +
		`"image":{"type":"string","maxLength":512},"tags":{"type":"array","maxItems":20,"items":{"type":"string","maxLength":64}},"notes":{"type":"string","maxLength":4096}}` +
		rules + `}}}}}]}}`
}
