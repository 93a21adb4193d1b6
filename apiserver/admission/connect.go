package admission

import (
	"context"

	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/scheme"
)

// Connect is the operation of pods/attach, pods/exec and pods/portforward:
// kube-apiserver's admission judges them as CONNECT, on their options.
const Connect Operation = "CONNECT"

// ConnectOptions is what a CONNECT request is judged on: Kubernetes'
// PodAttachOptions, PodExecOptions or PodPortForwardOptions (its Kind
// says which), for the pod Meta names. Meta is not part of the options a
// webhook reads.
type ConnectOptions struct {
	meta.TypeMeta `json:",inline"`
	Meta          meta.ObjectMeta `json:"-"`
	Stdin         bool            `json:"stdin,omitempty"`
	Stdout        bool            `json:"stdout,omitempty"`
	Stderr        bool            `json:"stderr,omitempty"`
	TTY           bool            `json:"tty,omitempty"`
	Container     string          `json:"container,omitempty"`
	Command       []string        `json:"command,omitempty"`
	Ports         []int32         `json:"ports,omitempty"`
}

// GetObjectMeta implements meta.Object: the pod's name and namespace.
func (o *ConnectOptions) GetObjectMeta() *meta.ObjectMeta { return &o.Meta }

// ConnectAdmitter is a plugin that also judges CONNECT requests (the
// admission webhooks).
type ConnectAdmitter interface {
	AdmitConnect(ctx context.Context, k *scheme.Kind, subresource string, o *ConnectOptions) error
}

// AdmitConnect runs the plugins that judge CONNECT requests, mutating
// ones first, as kube-apiserver's connect handler runs its chain before
// it opens the stream.
func (c *Chain) AdmitConnect(ctx context.Context, k *scheme.Kind, subresource string, o *ConnectOptions) error {
	for _, m := range c.Mutators {
		if ca, ok := m.(ConnectAdmitter); ok {
			if err := ca.AdmitConnect(ctx, k, subresource, o); err != nil {
				return err
			}
		}
	}
	for _, v := range c.Validators {
		if ca, ok := v.(ConnectAdmitter); ok {
			if err := ca.AdmitConnect(ctx, k, subresource, o); err != nil {
				return err
			}
		}
	}
	return nil
}
