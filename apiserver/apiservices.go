package apiserver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/apiregistration"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/proto/apipb"
)

// kube-aggregator's autoregistration, without the aggregation: every
// group version the server serves — the built-in ones and those of
// CustomResourceDefinitions — has an APIService named version.group
// ("v1." for the core group), labeled as automanaged, Available with
// reason Local; one whose group version is no longer served (its last
// definition deleted) is deleted. An APIService a user created for a
// group version the server does not serve is kept, and says so
// (Available False, ServiceNotFound). Checked every apiServicesEvery.

const (
	apiServicesEvery = 5 * time.Second
	// automanagedLabel marks the APIServices the server made itself, as
	// kube-aggregator marks them ("onstart" for built-in groups, "true"
	// for the groups of custom kinds).
	automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"
)

// groupPriorities are kube-aggregator's priorities of the built-in
// groups (groupPriorityMinimum, versionPriority); a custom group gets
// 1000 and 100.
var groupPriorities = map[string][2]int32{
	"": {18000, 1}, "apiregistration.k8s.io": {18000, 15}, "apps": {17800, 15}, "events.k8s.io": {17750, 15},
	"authentication.k8s.io": {17700, 15}, "authorization.k8s.io": {17600, 15}, "autoscaling": {17500, 15},
	"batch": {17400, 15}, "certificates.k8s.io": {17300, 15}, "networking.k8s.io": {17200, 15}, "policy": {17100, 15},
	"rbac.authorization.k8s.io": {17000, 15}, "storage.k8s.io": {16800, 15}, "admissionregistration.k8s.io": {16700, 15},
	"apiextensions.k8s.io": {16700, 15}, "scheduling.k8s.io": {16600, 15}, "coordination.k8s.io": {16500, 15},
	"node.k8s.io": {16300, 15}, "discovery.k8s.io": {16200, 15}, "flowcontrol.apiserver.k8s.io": {16100, 21},
}

// servedGroupVersions are the group versions the kinds are served at,
// with whether a custom kind's (a definition's) they are.
func servedGroupVersions(kinds *scheme.Kinds) map[string]bool {
	out := map[string]bool{}
	add := func(apiVersion string, custom bool) {
		group, version, ok := strings.Cut(apiVersion, "/")
		if !ok {
			group, version = "", apiVersion
		}
		out[apiregistration.NameOf(group, version)] = custom
	}
	for _, k := range kinds.All() {
		add(k.APIVersion, k.Custom != nil)
		for _, v := range k.Versions {
			add(v.APIVersion, k.Custom != nil)
		}
	}
	for _, r := range registry.Reviews {
		add(r.Group+"/v1", false)
	}
	return out
}

// runAPIServices follows what is served (the start registered what was
// served then).
func (s *Server) runAPIServices(ctx context.Context) {
	t := time.NewTicker(apiServicesEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.syncAPIServices(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logf("kobune-apiserver: APIServices: %v", err)
		}
	}
}

// syncAPIServices makes the stored APIServices match what is served.
func (s *Server) syncAPIServices(ctx context.Context) error {
	k, _ := scheme.ByResource("apiservices")
	have, err := registry.ListStored[*apiregistration.APIService](ctx, s.store, "apiservices")
	if err != nil {
		return err
	}
	served := servedGroupVersions(s.kinds)
	byName := map[string]*apiregistration.APIService{}
	for _, a := range have {
		byName[a.Name] = a
		if _, ok := served[a.Name]; !ok && a.Labels[automanagedLabel] != "" && a.Spec.Service == nil {
			_, err := s.registry.Delete(ctx, &apipb.DeleteRequest{Resource: k.Resource, Name: a.Name, Preconditions: &apipb.Preconditions{Uid: a.UID}})
			if err != nil && status.Code(err) != codes.NotFound {
				return fmt.Errorf("delete %s: %w", a.Name, err)
			}
			delete(byName, a.Name)
		}
	}
	for name, custom := range served {
		if _, ok := byName[name]; ok {
			continue
		}
		version, group, _ := strings.Cut(name, ".")
		prio, ok := groupPriorities[group]
		if !ok {
			prio = [2]int32{1000, 100}
		}
		if group == "autoscaling" && version == "v2" {
			prio[1] = 30 // the preferred version of its group, as in Kubernetes
		}
		how := "onstart"
		if custom {
			how = "true"
		}
		a := &apiregistration.APIService{ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{automanagedLabel: how}},
			Spec: apiregistration.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: prio[0], VersionPriority: prio[1]}}
		a.TypeMeta = meta.TypeMeta{APIVersion: k.APIVersion, Kind: k.Kind}
		if _, err := s.registry.CreateObject(ctx, k, a); err != nil && !registry.IsAlreadyExists(err) {
			return fmt.Errorf("create %s: %w", name, err)
		}
	}
	// Status: Available when served here.
	have, err = registry.ListStored[*apiregistration.APIService](ctx, s.store, "apiservices")
	if err != nil {
		return err
	}
	for _, a := range have {
		want := apiregistration.APIServiceCondition{Type: apiregistration.Available, Status: "True", Reason: "Local", Message: "Local APIServices are always available"}
		if _, ok := served[a.Name]; !ok {
			want = apiregistration.APIServiceCondition{Type: apiregistration.Available, Status: "False", Reason: "ServiceNotFound",
				Message: fmt.Sprintf("the API server serves no group version %s/%s", a.Spec.Group, a.Spec.Version)}
		}
		if len(a.Status.Conditions) == 1 && a.Status.Conditions[0].Status == want.Status && a.Status.Conditions[0].Reason == want.Reason {
			continue
		}
		want.LastTransitionTime = meta.Now()
		a.Status.Conditions = []apiregistration.APIServiceCondition{want}
		if _, err := s.registry.UpdateObjectStatus(ctx, k, a); err != nil && !registry.IsConflict(err) && status.Code(err) != codes.NotFound {
			return fmt.Errorf("status of %s: %w", a.Name, err)
		}
	}
	return nil
}
