package agent

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/kobune/kobune/agent/volume"
	"github.com/kobune/kobune/api/core"
	v "github.com/kobune/kobune/api/validation"
)

// containerEnv is a container's whole environment, in the kubelet's
// order: the Service link variables, then envFrom's keys (a later source
// wins a name), then env (which wins over both; a value's $(VAR) names a
// variable set before it). A reference that cannot
// be resolved — a ConfigMap or Secret that does not exist, a key it does
// not have — is an error naming it, unless the reference is optional;
// the container then waits with CreateContainerConfigError.
func (w *podWorkers) containerEnv(ctx context.Context, pod *core.Pod, c *core.Container, podIP string) ([]string, []string, error) {
	vars := map[string]string{}
	var order []string
	set := func(name, value string) {
		if _, ok := vars[name]; !ok {
			order = append(order, name)
		}
		vars[name] = value
	}
	if w.services != nil {
		for _, e := range serviceEnv(pod, w.services.List()) {
			set(e.Name, e.Value)
		}
	}
	var skipped []string
	for _, f := range c.EnvFrom {
		var data map[string][]byte
		var err error
		var what string
		optional := false
		switch {
		case f.ConfigMapRef != nil:
			what = fmt.Sprintf("configmap %q", f.ConfigMapRef.Name)
			optional = f.ConfigMapRef.Optional != nil && *f.ConfigMapRef.Optional
			var cm *core.ConfigMap
			if cm, err = w.sources.ConfigMap(ctx, pod.Namespace, f.ConfigMapRef.Name); err == nil {
				data = map[string][]byte{}
				for k, v := range cm.Data {
					data[k] = []byte(v)
				}
			}
		case f.SecretRef != nil:
			what = fmt.Sprintf("secret %q", f.SecretRef.Name)
			optional = f.SecretRef.Optional != nil && *f.SecretRef.Optional
			var s *core.Secret
			if s, err = w.sources.Secret(ctx, pod.Namespace, f.SecretRef.Name); err == nil {
				data = volume.SecretData(s)
			}
		}
		if errors.Is(err, volume.ErrNotFound) && optional {
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%s not found", what)
		}
		keys := make([]string, 0, len(data))
		for k := range data {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if v.IsEnvVarName(f.Prefix+k) != "" {
				skipped = append(skipped, f.Prefix+k) // as the kubelet: not a valid name, left out
				continue
			}
			set(f.Prefix+k, string(data[k]))
		}
	}
	lookup := func(name string) (string, bool) { v, ok := vars[name]; return v, ok }
	for _, e := range c.Env {
		value, ok, err := w.envValue(ctx, pod, c, e, podIP)
		if err != nil {
			return nil, nil, err
		}
		if e.ValueFrom == nil {
			// A value may name the variables set before it: $(VAR).
			value = expand(value, lookup)
		}
		if ok {
			set(e.Name, value)
		}
	}
	out := make([]string, 0, len(order))
	for _, name := range order {
		out = append(out, name+"="+vars[name])
	}
	return out, skipped, nil
}

// envValue resolves one env entry; ok is false for an optional reference
// that is missing (the variable is then not set).
func (w *podWorkers) envValue(ctx context.Context, pod *core.Pod, c *core.Container, e core.EnvVar, podIP string) (string, bool, error) {
	src := e.ValueFrom
	switch {
	case src == nil:
		return e.Value, true, nil
	case src.FieldRef != nil:
		s, err := volume.FieldValue(pod, src.FieldRef.FieldPath, podIP, w.nodeIP)
		return s, err == nil, err
	case src.ResourceFieldRef != nil:
		s, err := volume.ResourceValue(pod, src.ResourceFieldRef, c.Name, w.allocatable())
		return s, err == nil, err
	case src.ConfigMapKeyRef != nil:
		r := src.ConfigMapKeyRef
		optional := r.Optional != nil && *r.Optional
		cm, err := w.sources.ConfigMap(ctx, pod.Namespace, r.Name)
		switch {
		case errors.Is(err, volume.ErrNotFound) && optional:
			return "", false, nil
		case errors.Is(err, volume.ErrNotFound):
			return "", false, fmt.Errorf("configmap %q not found", r.Name)
		case err != nil:
			return "", false, err
		}
		if s, ok := cm.Data[r.Key]; ok {
			return s, true, nil
		}
		if b, ok := cm.BinaryData[r.Key]; ok {
			return string(b), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in ConfigMap %s/%s", r.Key, pod.Namespace, r.Name)
	case src.SecretKeyRef != nil:
		r := src.SecretKeyRef
		optional := r.Optional != nil && *r.Optional
		s, err := w.sources.Secret(ctx, pod.Namespace, r.Name)
		switch {
		case errors.Is(err, volume.ErrNotFound) && optional:
			return "", false, nil
		case errors.Is(err, volume.ErrNotFound):
			return "", false, fmt.Errorf("secret %q not found", r.Name)
		case err != nil:
			return "", false, err
		}
		if b, ok := volume.SecretData(s)[r.Key]; ok {
			return string(b), true, nil
		}
		if optional {
			return "", false, nil
		}
		return "", false, fmt.Errorf("couldn't find key %s in Secret %s/%s", r.Key, pod.Namespace, r.Name)
	}
	return e.Value, true, nil
}
