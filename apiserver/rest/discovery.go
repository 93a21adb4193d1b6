package rest

import (
	"net/http"
	"runtime"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/version"
	"github.com/kobune/kobune/apiserver/registry"
)

// Discovery: what kubectl and client-go read to learn which resources the
// server has (kubectl api-resources, the RESTMapper behind every command).
// Both forms are served: aggregated discovery (apidiscovery.k8s.io/v2, one
// request for /api and one for /apis, what kubectl asks for first) and the
// legacy lists (APIVersions, APIGroupList, APIResourceList per group
// version). Both are made from the same table (discoveryGroups), which is
// made from api/scheme: a kind is discoverable exactly when it is served.

// apiResource is one resource (or subresource) in discovery.
type apiResource struct {
	Name         string   `json:"name"`
	SingularName string   `json:"singularName"`
	Namespaced   bool     `json:"namespaced"`
	Group        string   `json:"group,omitempty"`
	Version      string   `json:"version,omitempty"`
	Kind         string   `json:"kind"`
	Verbs        []string `json:"verbs"`
	ShortNames   []string `json:"shortNames,omitempty"`
	Categories   []string `json:"categories,omitempty"`
}

type discoveryGroup struct {
	name, version string
	resources     []apiResource // subresources as "pods/status"
	// alternate: a version served beside the group's preferred one
	// (autoscaling/v1 beside autoscaling/v2), by conversion.
	alternate bool
}

func (g *discoveryGroup) groupVersion() string {
	if g.name == "" {
		return g.version
	}
	return g.name + "/" + g.version
}

// allCategory is what `kubectl get all` lists (Kubernetes' set, less the
// kinds Kobune does not serve).
var allCategory = map[string]bool{"pods": true, "services": true, "deployments": true, "replicasets": true,
	"statefulsets": true, "daemonsets": true, "jobs": true, "cronjobs": true, "replicationcontrollers": true}

// resourceVerbs are the verbs the REST API serves on every stored kind.
var resourceVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// discoveryGroups is every served group version with its resources,
// core first, then the groups by name.
func discoveryGroups(kinds *scheme.Kinds) []*discoveryGroup {
	byGV := map[string]*discoveryGroup{}
	group := func(gv string) *discoveryGroup {
		if g, ok := byGV[gv]; ok {
			return g
		}
		g := &discoveryGroup{version: gv}
		if n, v, ok := strings.Cut(gv, "/"); ok {
			g.name, g.version = n, v
		}
		byGV[gv] = g
		return g
	}
	for _, k := range kinds.All() {
		g := group(k.APIVersion)
		name := k.PluralName()
		r := apiResource{Name: name, SingularName: strings.ToLower(k.Kind), Namespaced: k.Namespaced, Kind: k.Kind,
			Verbs: resourceVerbs, ShortNames: k.ShortNames}
		if allCategory[k.Resource] {
			r.Categories = []string{"all"}
		}
		if c := k.Custom; c != nil {
			r.SingularName, r.Categories = c.Singular, c.Categories
		}
		g.resources = append(g.resources, r)
		if k.HasStatus {
			g.resources = append(g.resources, apiResource{Name: name + "/status", Namespaced: k.Namespaced, Kind: k.Kind, Verbs: []string{"get", "patch", "update"}})
		}
		if registry.Scalable(k) {
			g.resources = append(g.resources, apiResource{Name: name + "/scale", Namespaced: k.Namespaced, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "patch", "update"}})
		}
		if k.Resource == "pods" {
			g.resources = append(g.resources, apiResource{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
				apiResource{Name: "pods/binding", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
				apiResource{Name: "pods/eviction", Namespaced: true, Group: "policy", Version: "v1", Kind: "Eviction", Verbs: []string{"create"}},
				apiResource{Name: "pods/ephemeralcontainers", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "patch", "update"}},
				apiResource{Name: "pods/resize", Namespaced: true, Kind: "Pod", Verbs: []string{"get", "patch", "update"}})
		}
		if k.Resource == "certificatesigningrequests" {
			g.resources = append(g.resources, apiResource{Name: "certificatesigningrequests/approval", Kind: k.Kind, Verbs: []string{"get", "patch", "update"}})
		}
		if k.Resource == "serviceaccounts" {
			g.resources = append(g.resources, apiResource{Name: "serviceaccounts/token", Namespaced: true, Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: []string{"create"}})
		}
		for _, v := range k.Versions { // the same resource, converted (versions.go)
			alt := group(v.APIVersion)
			// Another version of the kind's own group is listed beside
			// the group's preferred one; a version in another group
			// (events.k8s.io/v1 Events) is that group's own.
			alt.alternate = alt.name == g.name
			alt.resources = append(alt.resources, r)
			if k.HasStatus {
				alt.resources = append(alt.resources, apiResource{Name: name + "/status", Namespaced: k.Namespaced, Kind: k.Kind, Verbs: []string{"get", "patch", "update"}})
			}
		}
	}
	// The resource metrics API: not stored, served from the agents
	// (apiserver/nodeproxy/metrics.go).
	m := group("metrics.k8s.io/v1beta1")
	m.resources = append(m.resources, apiResource{Name: "nodes", SingularName: "", Kind: "NodeMetrics", Verbs: []string{"get", "list"}},
		apiResource{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: []string{"get", "list"}})
	for res, r := range registry.Reviews {
		g := group(r.Group + "/v1")
		g.resources = append(g.resources, apiResource{Name: res, SingularName: strings.ToLower(r.Kind), Namespaced: r.Namespaced, Kind: r.Kind, Verbs: []string{"create"}})
	}
	out := make([]*discoveryGroup, 0, len(byGV))
	for _, g := range byGV {
		sort.Slice(g.resources, func(i, j int) bool { return g.resources[i].Name < g.resources[j].Name })
		out = append(out, g)
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i].name == "") != (out[j].name == "") {
			return out[i].name == ""
		}
		if out[i].name != out[j].name {
			return out[i].name < out[j].name
		}
		return !out[i].alternate && out[j].alternate // the preferred version first
	})
	return out
}

// servedGroupsCache is discovery as made for one set of custom kinds.
type servedGroupsCache struct {
	version any // Kinds.CustomVersion when made
	groups  []*discoveryGroup
}

// servedGroups is discovery, made again only when the custom kinds
// changed: kubectl reads it before most commands.
func (s *Handler) servedGroups() []*discoveryGroup {
	v := s.cfg.Kinds.CustomVersion()
	if c := s.groups.Load(); c != nil && c.version == v {
		return c.groups
	}
	g := discoveryGroups(s.cfg.Kinds)
	s.groups.Store(&servedGroupsCache{version: v, groups: g})
	return g
}

// versionsOf are the served versions of group name, the preferred first.
func versionsOf(groups []*discoveryGroup, name string) []*discoveryGroup {
	var out []*discoveryGroup
	for _, g := range groups {
		if g.name == name {
			out = append(out, g)
		}
	}
	return out
}

// apiGroup is a legacy APIGroup: every version, and the preferred one.
func apiGroup(versions []*discoveryGroup) map[string]any {
	var vs []any
	for _, g := range versions {
		vs = append(vs, map[string]string{"groupVersion": g.groupVersion(), "version": g.version})
	}
	return map[string]any{"name": versions[0].name, "versions": vs, "preferredVersion": vs[0]}
}

// kubernetesVersion is the Kubernetes release whose API the REST API
// mirrors: what /version reports, so that kubectl's version-skew warning
// compares against it.
const kubernetesVersion = "1.37"

// serveDiscovery serves /version, /api, /apis and the group versions.
func (s *Handler) serveDiscovery(w http.ResponseWriter, r *http.Request) {
	if !s.pathAllowed(w, r) {
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, statusWithCode(http.StatusMethodNotAllowed, "MethodNotAllowed", r.Method+" is not allowed on "+r.URL.Path), nil)
		return
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	aggregated := wantsAggregated(r)
	servedGroups := s.servedGroups()
	switch {
	case p == "/version":
		major, minor, _ := strings.Cut(kubernetesVersion, ".")
		writeObject(w, http.StatusOK, map[string]string{
			"major": major, "minor": minor, "gitVersion": "v" + kubernetesVersion + ".0+kobune." + strings.TrimPrefix(version.Kobune, "v"),
			"gitCommit": "", "gitTreeState": "", "buildDate": "", "goVersion": runtime.Version(), "compiler": runtime.Compiler,
			"platform": runtime.GOOS + "/" + runtime.GOARCH,
		})
	case p == "/api" && aggregated:
		writeAggregated(w, servedGroups[:1])
	case p == "/api":
		writeObject(w, http.StatusOK, map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": r.Host}}})
	case p == "/apis" && aggregated:
		writeAggregated(w, servedGroups[1:])
	case p == "/apis":
		var groups []map[string]any
		for _, g := range servedGroups[1:] {
			if !g.alternate {
				groups = append(groups, apiGroup(versionsOf(servedGroups, g.name)))
			}
		}
		writeObject(w, http.StatusOK, map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
	default:
		for _, g := range servedGroups {
			switch p {
			case "/apis/" + g.name:
				group := apiGroup(versionsOf(servedGroups, g.name))
				group["kind"], group["apiVersion"] = "APIGroup", "v1"
				writeObject(w, http.StatusOK, group)
				return
			case "/api/" + g.version, "/apis/" + g.groupVersion():
				if (g.name == "") != strings.HasPrefix(p, "/api/") {
					continue
				}
				writeObject(w, http.StatusOK, map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": g.groupVersion(), "resources": g.resources})
				return
			}
		}
		writeError(w, errNotFound(r.URL.Path), nil)
	}
}

// wantsAggregated: the client asks for apidiscovery.k8s.io/v2 before
// anything else.
func wantsAggregated(r *http.Request) bool {
	for _, a := range strings.Split(r.Header.Get("Accept"), ",") {
		if strings.Contains(a, "as=APIGroupDiscoveryList") {
			return strings.Contains(a, "v=v2") && !strings.Contains(a, "v=v2beta1")
		}
		if strings.TrimSpace(a) != "" {
			return false
		}
	}
	return false
}

const aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"

// The apidiscovery.k8s.io/v2 shapes.
type (
	discoveryGVK struct {
		Group   string `json:"group"`
		Version string `json:"version"`
		Kind    string `json:"kind"`
	}
	discoverySub struct {
		Subresource  string       `json:"subresource"`
		ResponseKind discoveryGVK `json:"responseKind"`
		Verbs        []string     `json:"verbs"`
	}
	discoveryRes struct {
		Resource         string         `json:"resource"`
		ResponseKind     discoveryGVK   `json:"responseKind"`
		Scope            string         `json:"scope"`
		SingularResource string         `json:"singularResource"`
		Verbs            []string       `json:"verbs"`
		ShortNames       []string       `json:"shortNames,omitempty"`
		Categories       []string       `json:"categories,omitempty"`
		Subresources     []discoverySub `json:"subresources,omitempty"`
	}
	discoveryVersion struct {
		Version   string         `json:"version"`
		Resources []discoveryRes `json:"resources"`
		Freshness string         `json:"freshness"`
	}
	discoveryGroupItem struct {
		Metadata map[string]string  `json:"metadata"`
		Versions []discoveryVersion `json:"versions"`
	}
)

// writeAggregated answers with an apidiscovery.k8s.io/v2 APIGroupDiscoveryList:
// one item per group, its versions the preferred first.
func writeAggregated(w http.ResponseWriter, groups []*discoveryGroup) {
	items := []discoveryGroupItem{}
	for _, g := range groups {
		if g.alternate { // listed with its group's preferred version
			continue
		}
		var versions []discoveryVersion
		for _, gv := range versionsOf(groups, g.name) {
			versions = append(versions, aggregatedVersion(gv))
		}
		items = append(items, discoveryGroupItem{Metadata: map[string]string{"name": g.name}, Versions: versions})
	}
	b := mustJSON(map[string]any{"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": map[string]any{}, "items": items})
	w.Header().Set("Content-Type", aggregatedContentType)
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(b)
}

// aggregatedVersion is one group version, its subresources under their
// resources.
func aggregatedVersion(g *discoveryGroup) discoveryVersion {
	v := discoveryVersion{Version: g.version, Freshness: "Current"}
	for _, r := range g.resources {
		kind := discoveryGVK{Group: g.name, Version: g.version, Kind: r.Kind}
		if r.Group != "" {
			kind.Group, kind.Version = r.Group, r.Version
		}
		if parent, subName, ok := strings.Cut(r.Name, "/"); ok {
			for i := range v.Resources {
				if v.Resources[i].Resource == parent {
					v.Resources[i].Subresources = append(v.Resources[i].Subresources, discoverySub{Subresource: subName, ResponseKind: kind, Verbs: r.Verbs})
				}
			}
			continue
		}
		scope := "Cluster"
		if r.Namespaced {
			scope = "Namespaced"
		}
		v.Resources = append(v.Resources, discoveryRes{Resource: r.Name, ResponseKind: kind, Scope: scope, SingularResource: r.SingularName,
			Verbs: r.Verbs, ShortNames: r.ShortNames, Categories: r.Categories})
	}
	return v
}
