package create

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func NewCmdRun(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var image, restart, pullPolicy string
	var port int32
	var labels, env []string
	var command bool
	cmd := &cobra.Command{
		Use:   "run NAME --image=IMAGE [--image-pull-policy=POLICY] [--port=PORT] [--env=K=V] [--labels=K=V,...] [--restart=Always|OnFailure|Never] [--command] [-- ARG...]",
		Short: "Run a pod of one container (kubectl run)",
		Long: `Create a pod of one container named NAME, labelled run=NAME (or
--labels). Arguments after -- are the container's args, or, with
--command, its command.`,
		Example: `  # A pod of labapp
  kobectl run web --image=kobune.local/labapp:1.0 --port=8080

  # A pod that runs a command once
  kobectl run once --image=kobune.local/busybox:1.35 --restart=Never --command -- sh -c 'date; sleep 5'

  # Only the manifest
  kobectl run web --image=kobune.local/labapp:1.0 --dry-run=client -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if image == "" {
				return fmt.Errorf("--image is required")
			}
			name := args[0]
			lbl := map[string]string{"run": name}
			if len(labels) > 0 {
				lbl = map[string]string{}
				for _, l := range labels {
					k, v, ok := strings.Cut(l, "=")
					if !ok {
						return fmt.Errorf("--labels %q: want KEY=VALUE", l)
					}
					lbl[k] = v
				}
			}
			ctr := core.Container{Name: name, Image: image}
			switch core.PullPolicy(pullPolicy) {
			case "", core.PullAlways, core.PullIfNotPresent, core.PullNever:
				ctr.ImagePullPolicy = core.PullPolicy(pullPolicy)
			default:
				return fmt.Errorf("--image-pull-policy %q: use Always, IfNotPresent or Never", pullPolicy)
			}
			if port > 0 {
				ctr.Ports = []core.ContainerPort{{ContainerPort: port}}
			}
			for _, e := range env {
				k, v, ok := strings.Cut(e, "=")
				if !ok {
					return fmt.Errorf("--env %q: want KEY=VALUE", e)
				}
				ctr.Env = append(ctr.Env, core.EnvVar{Name: k, Value: v})
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 && len(args) > dash {
				if command {
					ctr.Command = args[dash:]
				} else {
					ctr.Args = args[dash:]
				}
			} else if command {
				return fmt.Errorf("--command needs the command after --")
			}
			switch restart {
			case "Always", "OnFailure", "Never":
			default:
				return fmt.Errorf("--restart %q: use Always, OnFailure or Never", restart)
			}
			pod := &core.Pod{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta.ObjectMeta{Name: name, Labels: lbl},
				Spec: core.PodSpec{Containers: []core.Container{ctr}, RestartPolicy: core.RestartPolicy(restart)}}
			return emitFor(o, cmd, pod, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&image, "image", "", "the container's image")
	cmd.Flags().StringVar(&pullPolicy, "image-pull-policy", "", "the container's imagePullPolicy: Always, IfNotPresent or Never (empty: the server's default)")
	cmd.Flags().Int32Var(&port, "port", 0, "the port the container serves")
	cmd.Flags().StringSliceVarP(&labels, "labels", "l", nil, "the pod's labels KEY=VALUE,... (default run=NAME)")
	cmd.Flags().StringArrayVar(&env, "env", nil, "an environment variable KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&restart, "restart", "Always", "the pod's restartPolicy: Always, OnFailure or Never")
	cmd.Flags().BoolVar(&command, "command", false, "the words after -- are the command, not args")
	return cmd
}
