// Package controllertest is the fixture for controller unit tests (the
// pattern of kubernetes/sample-controller's tests): a fake API client that records every write, plus helpers
// to read those writes back. Paired with informers pre-filled through
// client.Informer.Seed, a test calls a controller's Reconcile directly and
// checks what it asked the API server to do, with no server running.
package controllertest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/proto/apipb"
)

// Action is one recorded write.
type Action struct {
	Verb      string // create, update, updatestatus, delete
	Resource  string
	Namespace string
	Name      string
	Object    []byte // as written (create, update), with the name and resourceVersion the server chose
	// PropagationPolicy and GracePeriodSeconds of a delete.
	PropagationPolicy string
	GracePeriod       *int64
}

// API is a fake apipb.ResourceAPIClient: writes succeed and are recorded;
// reads and watches are not expected (controllers read their caches).
type API struct {
	apipb.ResourceAPIClient // nil: any unexpected call panics

	mu      sync.Mutex
	actions []Action
	seq     int
	// Fail, when set, answers writes of that verb with the error.
	Fail map[string]error
	// OnWrite, when set, runs after each recorded write, before it
	// returns: a test makes something happen in the middle of a pass
	// (an informer event landing, say).
	OnWrite func(Action)
	// objects answer Get: "resource/namespace/name" → JSON (Put).
	objects map[string][]byte
}

// Put makes Get return o (for controllers that read fresh copies).
func (f *API) Put(resource string, o any) {
	m := o.(interface{ GetObjectMeta() *meta.ObjectMeta }).GetObjectMeta()
	b, _ := json.Marshal(o)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.objects == nil {
		f.objects = map[string][]byte{}
	}
	f.objects[resource+"/"+m.Namespace+"/"+m.Name] = b
}

// List implements apipb.ResourceAPIClient from the objects given to Put
// (no selectors).
func (f *API) List(_ context.Context, in *apipb.ListRequest, _ ...grpc.CallOption) (*apipb.ListResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	prefix := in.Resource + "/" + in.Namespace + "/"
	if in.Namespace == "" {
		prefix = in.Resource + "/"
	}
	out := &apipb.ListResponse{}
	for k, b := range f.objects {
		if strings.HasPrefix(k, prefix) {
			out.Items = append(out.Items, b)
		}
	}
	return out, nil
}

// Get implements apipb.ResourceAPIClient from the objects given to Put.
func (f *API) Get(_ context.Context, in *apipb.GetRequest, _ ...grpc.CallOption) (*apipb.ObjectResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.objects[in.Resource+"/"+in.Namespace+"/"+in.Name]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "%s %q not found", in.Resource, in.Name)
	}
	return &apipb.ObjectResponse{Object: b}, nil
}

// NewClient returns a client whose API is a new fake.
func NewClient() (*client.Client, *API) {
	f := &API{}
	return &client.Client{API: f, Addr: "fake"}, f
}

// Actions returns the writes so far.
func (f *API) Actions() []Action {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Action(nil), f.actions...)
}

// Filter returns the writes of one verb on one resource.
func (f *API) Filter(verb, resource string) []Action {
	var out []Action
	for _, a := range f.Actions() {
		if a.Verb == verb && a.Resource == resource {
			out = append(out, a)
		}
	}
	return out
}

// Reset forgets the recorded writes.
func (f *API) Reset() {
	f.mu.Lock()
	f.actions = nil
	f.mu.Unlock()
}

// Decode decodes a recorded object.
func Decode[T any](a Action) T {
	var o T
	if err := json.Unmarshal(a.Object, &o); err != nil {
		panic(fmt.Sprintf("decode %s %s: %v", a.Verb, a.Resource, err))
	}
	return o
}

func (f *API) record(a Action) error {
	f.mu.Lock()
	if err := f.Fail[a.Verb]; err != nil {
		f.mu.Unlock()
		return err
	}
	f.actions = append(f.actions, a)
	hook := f.OnWrite
	f.mu.Unlock()
	if hook != nil {
		hook(a)
	}
	return nil
}

// Create implements apipb.ResourceAPIClient: it fills generateName, uid
// and resourceVersion as the server would.
func (f *API) Create(_ context.Context, in *apipb.CreateRequest, _ ...grpc.CallOption) (*apipb.ObjectResponse, error) {
	k, ok := scheme.ByResource(in.Resource)
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unknown resource %q", in.Resource)
	}
	o, err := k.Decode(in.Object)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	m := o.GetObjectMeta()
	f.mu.Lock()
	f.seq++
	seq := f.seq
	f.mu.Unlock()
	if m.Name == "" {
		m.Name = fmt.Sprintf("%s%05d", m.GenerateName, seq)
	}
	if m.Namespace == "" && k.Namespaced {
		m.Namespace = in.Namespace
	}
	m.UID = fmt.Sprintf("uid-%s-%d", m.Name, seq)
	m.ResourceVersion = fmt.Sprint(seq)
	b, _ := json.Marshal(o)
	if err := f.record(Action{Verb: "create", Resource: in.Resource, Namespace: m.Namespace, Name: m.Name, Object: b}); err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b}, nil
}

func (f *API) update(verb string, in *apipb.UpdateRequest) (*apipb.ObjectResponse, error) {
	k, ok := scheme.ByResource(in.Resource)
	if !ok {
		return nil, status.Errorf(codes.InvalidArgument, "unknown resource %q", in.Resource)
	}
	o, err := k.Decode(in.Object)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	m := o.GetObjectMeta()
	// A write moves the resourceVersion, as the server's does.
	f.mu.Lock()
	f.seq++
	m.ResourceVersion = fmt.Sprint(f.seq)
	f.mu.Unlock()
	b, _ := json.Marshal(o)
	if err := f.record(Action{Verb: verb, Resource: in.Resource, Namespace: m.Namespace, Name: m.Name, Object: b}); err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{Object: b}, nil
}

// Update implements apipb.ResourceAPIClient.
func (f *API) Update(_ context.Context, in *apipb.UpdateRequest, _ ...grpc.CallOption) (*apipb.ObjectResponse, error) {
	return f.update("update", in)
}

// UpdateStatus implements apipb.ResourceAPIClient.
func (f *API) UpdateStatus(_ context.Context, in *apipb.UpdateRequest, _ ...grpc.CallOption) (*apipb.ObjectResponse, error) {
	return f.update("updatestatus", in)
}

// Delete implements apipb.ResourceAPIClient.
func (f *API) Delete(_ context.Context, in *apipb.DeleteRequest, _ ...grpc.CallOption) (*apipb.ObjectResponse, error) {
	a := Action{Verb: "delete", Resource: in.Resource, Namespace: in.Namespace, Name: in.Name, PropagationPolicy: in.PropagationPolicy}
	if in.GracePeriodSeconds != nil {
		g := *in.GracePeriodSeconds
		a.GracePeriod = &g
	}
	if err := f.record(a); err != nil {
		return nil, err
	}
	return &apipb.ObjectResponse{}, nil
}
