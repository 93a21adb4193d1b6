package create

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func NewCmdExpose(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var name, typ, protocol, targetPort string
	var port, nodePort int32
	cmd := &cobra.Command{
		Use:   "expose (TYPE/NAME | TYPE NAME) [--port=PORT] [--target-port=PORT] [--name=NAME] [--type=TYPE]",
		Short: "Make a Service for the pods of a pod, Deployment, ReplicaSet, StatefulSet or Service (kubectl expose)",
		Long: `Create a Service that selects what TYPE/NAME selects (a pod's labels, a
workload's selector, a Service's selector). Without --port, the first
container port of the pods is used.`,
		Example: `  # Port 80 of Service web to port 8080 of Deployment web's pods
  kobectl expose deployment web --port=80 --target-port=8080

  # On every node's port, for pod hello-1
  kobectl expose pod/hello-1 --port=8080 --type=NodePort --name=hello`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			target := args[0]
			if len(args) == 2 {
				target = args[0] + "/" + args[1]
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			svc, err := exposeService(ctx, c, o.NamespaceOrDefault(), target)
			if err != nil {
				return err
			}
			if name != "" {
				svc.Name = name
			}
			svc.Spec.Type = typ
			if port != 0 {
				svc.Spec.Ports = []core.ServicePort{{Port: port, TargetPort: meta.FromInt(port)}}
			}
			if len(svc.Spec.Ports) == 0 {
				return fmt.Errorf("couldn't find port via --port flag or introspection: give --port")
			}
			for i := range svc.Spec.Ports {
				sp := &svc.Spec.Ports[i]
				sp.Protocol = core.Protocol(protocol)
				if targetPort != "" {
					if n, err := strconv.Atoi(targetPort); err == nil {
						sp.TargetPort = meta.FromInt(int32(n))
					} else {
						sp.TargetPort = meta.FromString(targetPort)
					}
				}
				if len(svc.Spec.Ports) > 1 {
					sp.Name = fmt.Sprintf("port-%d", i+1)
				}
			}
			if nodePort != 0 {
				svc.Spec.Ports[0].NodePort = nodePort
			}
			return emit(o, ctx, svc, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "the Service's name (default: the exposed object's)")
	cmd.Flags().StringVar(&typ, "type", "ClusterIP", "ClusterIP or NodePort")
	cmd.Flags().Int32Var(&port, "port", 0, "the Service's port (default: the pods' first container port)")
	cmd.Flags().StringVar(&targetPort, "target-port", "", "the pods' port, a number or a name (default: --port)")
	cmd.Flags().Int32Var(&nodePort, "node-port", 0, "with --type=NodePort, the node port")
	cmd.Flags().StringVar(&protocol, "protocol", "TCP", "TCP, UDP or SCTP")
	return cmd
}

// exposeService builds the Service kubectl expose would for target: its
// selector, and the container ports of its pod template.
func exposeService(ctx context.Context, c *client.Client, ns, target string) (*core.Service, error) {
	kind, name, ok := strings.Cut(target, "/")
	if !ok {
		return nil, fmt.Errorf("%q: name TYPE/NAME or TYPE NAME, as in deployment/web", target)
	}
	var sel map[string]string
	var spec core.PodSpec
	var ports []core.ServicePort
	var err error
	fromSelector := func(ls *meta.LabelSelector) error {
		if ls == nil || len(ls.MatchExpressions) > 0 {
			return fmt.Errorf("%s has a selector a Service cannot express (matchExpressions): write the Service yourself", target)
		}
		sel = ls.MatchLabels
		return nil
	}
	switch kind {
	case "pod", "pods", "po":
		var p *core.Pod
		if p, err = client.For[*core.Pod](c).Get(ctx, ns, name); err == nil {
			if sel, spec = p.Labels, p.Spec; len(sel) == 0 {
				err = fmt.Errorf("pod %s has no labels: a Service selects pods by label", name)
			}
		}
	case "deployment", "deployments", "deploy":
		var d *apps.Deployment
		if d, err = client.For[*apps.Deployment](c).Get(ctx, ns, name); err == nil {
			spec, err = d.Spec.Template.Spec, fromSelector(d.Spec.Selector)
		}
	case "replicaset", "replicasets", "rs":
		var r *apps.ReplicaSet
		if r, err = client.For[*apps.ReplicaSet](c).Get(ctx, ns, name); err == nil {
			spec, err = r.Spec.Template.Spec, fromSelector(r.Spec.Selector)
		}
	case "replicationcontroller", "replicationcontrollers", "rc":
		var r *core.ReplicationController
		if r, err = client.For[*core.ReplicationController](c).Get(ctx, ns, name); err == nil {
			if r.Spec.Template == nil {
				r.Spec.Template = &core.PodTemplateSpec{}
			}
			spec, sel = r.Spec.Template.Spec, r.Spec.Selector
		}
	case "statefulset", "statefulsets", "sts":
		var s *apps.StatefulSet
		if s, err = client.For[*apps.StatefulSet](c).Get(ctx, ns, name); err == nil {
			spec, err = s.Spec.Template.Spec, fromSelector(s.Spec.Selector)
		}
	case "service", "services", "svc":
		var s *core.Service
		if s, err = client.For[*core.Service](c).Get(ctx, ns, name); err == nil {
			sel, ports = s.Spec.Selector, s.Spec.Ports
		}
	default:
		return nil, fmt.Errorf("cannot expose a %s: expose a pod, deployment, replicaset, statefulset or service", kind)
	}
	if err != nil {
		return nil, err
	}
	for _, ctr := range spec.Containers {
		for _, p := range ctr.Ports {
			ports = append(ports, core.ServicePort{Port: p.ContainerPort, TargetPort: meta.FromInt(p.ContainerPort)})
		}
	}
	for i := range ports {
		ports[i].NodePort = 0
	}
	return &core.Service{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta.ObjectMeta{Name: name, Namespace: ns},
		Spec: core.ServiceSpec{Selector: sel, Ports: ports}}, nil
}
