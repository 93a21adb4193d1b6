package node

import (
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	v "github.com/kobune/kobune/api/validation"
)

// RuntimeClass names a container runtime configuration.
type RuntimeClass struct {
	meta.TypeMeta   `json:",inline"`
	meta.ObjectMeta `json:"metadata"`
	// Handler is the runtime handler's name on the nodes (a DNS label;
	// it may not change).
	Handler string `json:"handler"`
	// Overhead is what a pod of this class costs beyond its containers
	// (admission copies it into the pod's spec.overhead); Scheduling
	// restricts pods of this class to the nodes that support it
	// (admission merges it into the pod's node selector and tolerations).
	Overhead   *Overhead   `json:"overhead,omitempty"`
	Scheduling *Scheduling `json:"scheduling,omitempty"`
}

// Overhead is a pod's fixed overhead.
type Overhead struct {
	PodFixed resource.List `json:"podFixed,omitempty"`
}

// DefaultHandler is the one runtime handler Kobune's agents run pods
// with: containerd's runc.
const DefaultHandler = "runc"

// Scheduling is a node selector and tolerations merged into the pods of a
// RuntimeClass.
type Scheduling struct {
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	Tolerations  []core.Toleration `json:"tolerations,omitempty"`
}

// ValidateRuntimeClass checks a RuntimeClass as kube-apiserver does.
func ValidateRuntimeClass(rc *RuntimeClass) v.ErrorList {
	errs := v.ValidateObjectMeta(&rc.ObjectMeta, false, v.IsDNS1123Subdomain, v.NewPath("metadata"))
	if rc.Handler == "" {
		errs = append(errs, v.NewRequired(v.NewPath("handler"), "the runtime handler's name"))
	} else {
		if msg := v.IsDNS1123Label(rc.Handler); msg != "" {
			errs = append(errs, v.NewInvalid(v.NewPath("handler"), rc.Handler, msg))
		}
	}
	if o := rc.Overhead; o != nil {
		p := v.NewPath("overhead", "podFixed")
		for _, name := range o.PodFixed.Names() {
			q := o.PodFixed[name]
			if name != resource.CPU && name != resource.Memory && name != "ephemeral-storage" {
				errs = append(errs, v.NewNotSupported(p.Key(string(name)), string(name), []string{"cpu", "memory", "ephemeral-storage"}))
			}
			if q.Sign() < 0 {
				errs = append(errs, v.NewInvalid(p.Key(string(name)), q.String(), "must be greater than or equal to 0"))
			}
		}
	}
	if s := rc.Scheduling; s != nil {
		p := v.NewPath("scheduling")
		errs = append(errs, v.ValidateLabels(s.NodeSelector, p.Child("nodeSelector"))...)
		errs = append(errs, core.ValidateTolerations(s.Tolerations, p.Child("tolerations"))...)
	}
	return errs
}

// ValidateRuntimeClassUpdate adds that the handler may not change.
func ValidateRuntimeClassUpdate(n, o *RuntimeClass) v.ErrorList {
	if n.Handler != o.Handler {
		return v.ErrorList{v.NewInvalid(v.NewPath("handler"), n.Handler, "field is immutable")}
	}
	return nil
}
