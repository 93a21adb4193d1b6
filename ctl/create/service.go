package create

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// parsePortPairs reads --tcp PORT[:TARGET] values.
func parsePortPairs(pairs []string) ([]core.ServicePort, error) {
	var ports []core.ServicePort
	for _, p := range pairs {
		port, target, hasTarget := strings.Cut(p, ":")
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("--tcp %q: want PORT or PORT:TARGET_PORT, ports between 1 and 65535", p)
		}
		sp := core.ServicePort{Name: fmt.Sprintf("%d-%s", n, target), Protocol: core.ProtocolTCP, Port: int32(n), TargetPort: meta.FromInt(int32(n))}
		if !hasTarget {
			sp.Name = fmt.Sprintf("%d-%d", n, n)
		} else if t, err := strconv.Atoi(target); err == nil {
			sp.TargetPort = meta.FromInt(int32(t))
		} else {
			sp.TargetPort = meta.FromString(target)
		}
		ports = append(ports, sp)
	}
	return ports, nil
}

func newCreateServiceCommand(o *cmdutil.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "service (clusterip | nodeport | externalname) NAME ...",
		Aliases: []string{"svc"},
		Short:   "Create a Service (kubectl create service)",
		Example: `  # Port 80 to port 8080 of the pods labelled app=web
  kobectl create service clusterip web --tcp=80:8080

  # The same on every node's port 30080
  kobectl create service nodeport web --tcp=80:8080 --node-port=30080`,
	}
	for _, typ := range []string{"ClusterIP", "NodePort", "LoadBalancer", "ExternalName"} {
		var g genFlags
		var tcp []string
		var nodePort int32
		var clusterIP, externalName string
		sub := &cobra.Command{
			Use:   strings.ToLower(typ) + " NAME",
			Short: "Create a " + typ + " Service; its selector is app=NAME (kubectl create service " + strings.ToLower(typ) + ")",
			Example: "  kobectl create service " + strings.ToLower(typ) + " web " + map[string]string{"ClusterIP": "--tcp=80:8080", "NodePort": "--tcp=80:8080 --node-port=30080",
				"LoadBalancer": "--tcp=80:8080   # on node ports until a load balancer controller serves it", "ExternalName": "--external-name=db.example.com"}[typ],
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				ports, err := parsePortPairs(tcp)
				if err != nil {
					return err
				}
				name := args[0]
				svc := &core.Service{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Service"},
					ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
					Spec:       core.ServiceSpec{Type: typ, Ports: ports, ClusterIP: clusterIP}}
				switch typ {
				case "ExternalName":
					if externalName == "" {
						return fmt.Errorf("--external-name is required")
					}
					svc.Spec.ExternalName = externalName
				default:
					if len(ports) == 0 && clusterIP != "None" {
						return fmt.Errorf("--tcp is required: at least one PORT[:TARGET_PORT]")
					}
					svc.Spec.Selector = map[string]string{"app": name}
				}
				if nodePort != 0 && len(svc.Spec.Ports) > 0 {
					svc.Spec.Ports[0].NodePort = nodePort
				}
				return emitFor(o, cmd, svc, &g)
			},
		}
		g.register(sub)
		if typ != "ExternalName" {
			sub.Flags().StringArrayVar(&tcp, "tcp", nil, "PORT[:TARGET_PORT] (repeatable)")
		}
		switch typ {
		case "ClusterIP":
			sub.Flags().StringVar(&clusterIP, "clusterip", "", `the cluster IP to ask for ("None": a headless Service)`)
		case "NodePort":
			sub.Flags().Int32Var(&nodePort, "node-port", 0, "the node port of the first port (default: one chosen from 30000-32767)")
		case "ExternalName":
			sub.Flags().StringVar(&externalName, "external-name", "", "the DNS name the Service stands for")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}
