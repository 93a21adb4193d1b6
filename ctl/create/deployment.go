package create

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func newCreateDeploymentCommand(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var images []string
	var replicas, port int32
	cmd := &cobra.Command{
		Use:     "deployment NAME --image=IMAGE [--replicas=N] [--port=PORT] [-- COMMAND [ARG...]]",
		Aliases: []string{"deploy"},
		Short:   "Create a Deployment (kubectl create deployment)",
		Example: `  # Two replicas of labapp, pods labelled app=web
  kobectl create deployment web --image=kobune.local/labapp:1.0 --replicas=2 --port=8080

  # Only write the manifest, to edit and apply later
  kobectl create deployment web --image=kobune.local/labapp:1.0 --dry-run=client -o yaml > web.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(images) == 0 {
				return fmt.Errorf("--image is required")
			}
			name := args[0]
			var containers []core.Container
			for _, img := range images {
				c := core.Container{Name: containerName(img), Image: img}
				if port > 0 {
					c.Ports = []core.ContainerPort{{ContainerPort: port}}
				}
				containers = append(containers, c)
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 && len(args) > dash {
				containers[0].Command = args[dash:]
			}
			labels := map[string]string{"app": name}
			d := &apps.Deployment{TypeMeta: meta.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels},
				Spec: apps.DeploymentSpec{Replicas: &replicas, Selector: &meta.LabelSelector{MatchLabels: labels},
					Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: labels}, Spec: core.PodSpec{Containers: containers}}}}
			return emitFor(o, cmd, d, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringSliceVar(&images, "image", nil, "the image of each container (repeatable: one container per image)")
	cmd.Flags().Int32Var(&replicas, "replicas", 1, "how many pods")
	cmd.Flags().Int32Var(&port, "port", 0, "the port the container serves")
	return cmd
}
