package apiextensions

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	apiext "github.com/kobune/kobune/api/apiextensions"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/apiserver/registry"
	"github.com/kobune/kobune/apiserver/storage"
	"github.com/kobune/kobune/apiserver/webhook"
)

// Controller follows the CustomResourceDefinitions in storage and keeps
// the server's kinds in step with them: a definition whose names no
// other definition of its group uses is accepted and served
// (NamesAccepted, Established), one whose names clash is not
// (NamesAccepted False, NameConflict); a deleted one (Terminating) stays
// served until every object of its kind is deleted, then its finalizer
// goes and so does it. Every API server runs one; their writes are
// idempotent, so two of them agree.
type Controller struct {
	Registry *registry.Registry
	Store    *storage.Store
	Kinds    *scheme.Kinds
	Logf     func(format string, args ...any)

	wake chan struct{}
	once sync.Once
	// caller calls conversion webhooks.
	caller *webhook.Caller
	// served is the kind served for each definition, by name, reused
	// while the definition is unchanged (generation).
	mu     sync.Mutex
	served map[string]servedKind
}

type servedKind struct {
	generation int64
	kind       *scheme.Kind
}

const resource = "customresourcedefinitions"

func (c *Controller) init() {
	c.once.Do(func() {
		c.wake = make(chan struct{}, 1)
		c.caller = &webhook.Caller{Store: c.Store}
		c.served = map[string]servedKind{}
	})
}

// Load reads the definitions and serves their kinds: the server calls it
// before it serves requests, so that a restart never answers 404 for a
// kind it served before.
func (c *Controller) Load(ctx context.Context) error {
	c.init()
	crds, err := registry.ListStored[*apiext.CustomResourceDefinition](ctx, c.Store, resource)
	if err != nil {
		return err
	}
	c.serve(crds)
	return nil
}

// Run follows the definitions until ctx ends.
func (c *Controller) Run(ctx context.Context) {
	c.init()
	go registry.Follow(ctx, c.Store, resource, nil, func([]meta.Object) { c.poke() }, func(storage.Event, meta.Object) { c.poke() })
	t := time.NewTicker(2 * time.Second) // the objects of a deleted kind go in rounds
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.wake:
		case <-t.C:
		}
		if err := c.sync(ctx); err != nil && ctx.Err() == nil {
			c.Logf("customresourcedefinitions: %v", err)
		}
	}
}

func (c *Controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// sync serves the accepted definitions and writes every definition's
// status; a deleted one's objects are deleted.
func (c *Controller) sync(ctx context.Context) error {
	crds, err := registry.ListStored[*apiext.CustomResourceDefinition](ctx, c.Store, resource)
	if err != nil {
		return err
	}
	accepted := c.serve(crds)
	crdKind, _ := scheme.ByResource(resource)
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil {
			if err := c.finalize(ctx, crd); err != nil {
				c.Logf("customresourcedefinition %s: %v", crd.Name, err)
			}
			continue
		}
		want := statusFor(crd, accepted[crd.Name])
		if statusEqual(crd.Status, want) {
			continue
		}
		crd.Status = want
		if _, err := c.Registry.UpdateObjectStatus(ctx, crdKind, crd); err != nil && !registry.IsConflict(err) {
			c.Logf("customresourcedefinition %s: status: %v", crd.Name, err)
		}
	}
	return nil
}

// serve computes which definitions' names are accepted and serves their
// kinds; it returns, by definition name, the conflict of those refused
// ("" for accepted ones).
func (c *Controller) serve(crds []*apiext.CustomResourceDefinition) map[string]string {
	// A definition whose names were accepted keeps them; among the rest
	// the oldest keeps a contested name, as Kubernetes' naming controller
	// lets the first come keep it.
	accepted := func(c *apiext.CustomResourceDefinition) bool {
		nc := c.Status.Condition(apiext.NamesAccepted)
		return nc != nil && nc.Status == apiext.ConditionTrue
	}
	slices.SortStableFunc(crds, func(a, b *apiext.CustomResourceDefinition) int {
		if aa, ba := accepted(a), accepted(b); aa != ba {
			if aa {
				return -1
			}
			return 1
		}
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		return cmpString(a.Name, b.Name)
	})
	result := map[string]string{}
	taken := map[string]string{} // group + "/" + name → definition
	var kinds []*scheme.Kind
	c.mu.Lock()
	defer c.mu.Unlock()
	next := map[string]servedKind{}
	for _, crd := range crds {
		n := crd.Spec.Names
		names := append([]string{n.Plural, n.Singular, "kind:" + n.Kind, "kind:" + n.ListKind}, n.ShortNames...)
		conflict := builtinConflict(crd.Spec.Group, n)
		for _, name := range names {
			if conflict != "" {
				break
			}
			if name == "" || name == "kind:" {
				continue
			}
			if other, ok := taken[crd.Spec.Group+"/"+name]; ok && other != crd.Name {
				conflict = fmt.Sprintf("%q is already in use by %s", trimKind(name), other)
				break
			}
		}
		result[crd.Name] = conflict
		if conflict != "" {
			continue
		}
		for _, name := range names {
			taken[crd.Spec.Group+"/"+name] = crd.Name
		}
		sk, ok := c.served[crd.Name]
		if !ok || sk.generation != crd.Generation || sk.kind.Custom.Definition.(*apiext.CustomResourceDefinition).UID != crd.UID {
			sk = servedKind{generation: crd.Generation, kind: KindFor(crd, c.caller)}
		}
		next[crd.Name] = sk
		kinds = append(kinds, sk.kind)
	}
	c.served = next
	c.Kinds.SetCustom(kinds)
	return result
}

// builtinConflict: a built-in kind of the group already has the plural or
// the kind (a definition of apps/deployments would hide, or be hidden by,
// the Deployments every cluster serves).
func builtinConflict(group string, n apiext.CustomResourceDefinitionNames) string {
	for _, k := range scheme.All() {
		if k.Group() != group {
			continue
		}
		if k.Resource == n.Plural || k.Kind == n.Kind {
			return fmt.Sprintf("%s.%s is a built-in kind of group %q", k.Resource, group, group)
		}
	}
	return ""
}

func trimKind(name string) string {
	if len(name) > 5 && name[:5] == "kind:" {
		return name[5:]
	}
	return name
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// statusFor is the status a definition should have.
func statusFor(crd *apiext.CustomResourceDefinition, conflict string) apiext.CustomResourceDefinitionStatus {
	st := crd.Status
	st.Conditions = slices.Clone(st.Conditions)
	if conflict == "" {
		st.AcceptedNames = crd.Spec.Names
		setCondition(&st, apiext.CustomResourceDefinitionCondition{Type: apiext.NamesAccepted, Status: apiext.ConditionTrue, Reason: "NoConflicts", Message: "no conflicts found"})
		setCondition(&st, apiext.CustomResourceDefinitionCondition{Type: apiext.Established, Status: apiext.ConditionTrue, Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"})
		if sv := crd.Spec.StorageVersion(); sv != "" && !slices.Contains(st.StoredVersions, sv) {
			st.StoredVersions = append(slices.Clone(st.StoredVersions), sv)
		}
	} else {
		setCondition(&st, apiext.CustomResourceDefinitionCondition{Type: apiext.NamesAccepted, Status: apiext.ConditionFalse, Reason: "NameConflict", Message: conflict})
		if est := st.Condition(apiext.Established); est == nil || est.Status != apiext.ConditionTrue {
			setCondition(&st, apiext.CustomResourceDefinitionCondition{Type: apiext.Established, Status: apiext.ConditionFalse, Reason: "NotAccepted", Message: "not all names are accepted"})
		}
	}
	return st
}

// setCondition sets a condition, keeping its transition time when its
// status does not change.
func setCondition(st *apiext.CustomResourceDefinitionStatus, c apiext.CustomResourceDefinitionCondition) {
	if old := st.Condition(c.Type); old != nil {
		if old.Status == c.Status {
			c.LastTransitionTime = old.LastTransitionTime
		} else {
			c.LastTransitionTime = meta.Now()
		}
		*old = c
		return
	}
	c.LastTransitionTime = meta.Now()
	st.Conditions = append(st.Conditions, c)
}

func statusEqual(a, b apiext.CustomResourceDefinitionStatus) bool {
	ea, _ := scheme.Encode(a)
	eb, _ := scheme.Encode(b)
	return string(ea) == string(eb)
}

// finalize deletes a deleted definition's objects and, once none is
// left, takes its finalizer away (the registry then deletes it).
func (c *Controller) finalize(ctx context.Context, crd *apiext.CustomResourceDefinition) error {
	if !crd.HasFinalizer(apiext.CleanupFinalizer) {
		return nil
	}
	crdKind, _ := scheme.ByResource(resource)
	left := 0
	c.mu.Lock()
	sk, served := c.served[crd.Name]
	c.mu.Unlock()
	if served {
		n, err := c.Registry.DeleteAll(ctx, sk.kind)
		if err != nil {
			return err
		}
		left = n
	}
	if left > 0 {
		st := crd.Status
		st.Conditions = slices.Clone(st.Conditions)
		setCondition(&st, apiext.CustomResourceDefinitionCondition{Type: apiext.Terminating, Status: apiext.ConditionTrue, Reason: "InstanceDeletionInProgress",
			Message: fmt.Sprintf("CustomResource deletion is in progress: %d left", left)})
		if !statusEqual(st, crd.Status) {
			crd.Status = st
			_, err := c.Registry.UpdateObjectStatus(ctx, crdKind, crd)
			return ignoreConflict(err)
		}
		return nil
	}
	crd.Finalizers = slices.DeleteFunc(slices.Clone(crd.Finalizers), func(f string) bool { return f == apiext.CleanupFinalizer })
	_, err := c.Registry.UpdateObject(ctx, crdKind, crd)
	if err == nil {
		c.Logf("customresourcedefinition %s: every %s deleted, the definition goes", crd.Name, crd.Spec.Names.Plural)
	}
	return ignoreConflict(err)
}

func ignoreConflict(err error) error {
	if registry.IsConflict(err) {
		return nil
	}
	return err
}
