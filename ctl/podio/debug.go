package podio

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"time"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdDebug is kubectl debug's pod form: an ephemeral container added to
// a running pod through pods/ephemeralcontainers, optionally in the
// process namespace of one of its containers (--target).
func NewCmdDebug(o *cmdutil.Options) *cobra.Command {
	var image, name, target, pull string
	var attach, stdin, tty bool
	cmd := &cobra.Command{
		Use:   "debug (POD | TYPE/NAME) --image IMAGE [--target CONTAINER] [-c NAME] [--attach] [-- COMMAND [ARG...]]",
		Short: "Add a debugging container to a running pod (kubectl debug)",
		Long: `Add an ephemeral container to a running pod (the pods/ephemeralcontainers
subresource): it runs once, in the pod's network (and, with --target, in
the process namespace of that container: its processes are visible), and
is never restarted. Without a command it runs the image's own.

Kobune's containers have no standard input or terminal, so -i and -t are
refused: run a command that stays (-- sleep 3600) and then
kobectl exec -it POD -c NAME -- sh. With --attach kobectl waits until the
container runs and prints what it writes until it exits. Copies of pods
(--copy-to) and node debugging are not supported.`,
		Example: `  # A busybox beside container app of pod web-0, seeing its processes
  kobectl debug web-0 --image kobune.local/busybox:1.35 --target app -- sleep 3600
  kobectl exec -it web-0 -c debugger-x7k2p -- ps

  # One command, its output printed
  kobectl debug deploy/web --image kobune.local/busybox:1.35 --attach -- nslookup kubernetes`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if stdin || tty {
				return fmt.Errorf("-i and -t are not supported: Kobune's containers have no standard input or terminal; run a command that stays (-- sleep 3600), then kobectl exec -it %s -c NAME -- sh", args[0])
			}
			if image == "" {
				return fmt.Errorf("--image is required (the debugging container's image, e.g. --image kobune.local/busybox:1.35)")
			}
			if dash := cmd.ArgsLenAtDash(); dash > 1 || dash < 0 && len(args) > 1 {
				return fmt.Errorf("one pod, then the command after --, as in: kobectl debug %s --image %s -- sh -c 'sleep 3600'", args[0], image)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			ref, err := resolvePod(ctx, c, o.NamespaceOrDefault(), args[0])
			if err != nil {
				return err
			}
			if name == "" {
				name = "debugger-" + randomSuffix()
				fmt.Fprintf(o.ErrOut, "Defaulting debug container name to %s.\n", name)
			}
			ec := core.EphemeralContainer{Container: core.Container{Name: name, Image: image, ImagePullPolicy: core.PullPolicy(pull),
				TerminationMessagePolicy: core.TerminationMessageReadFile}, TargetContainerName: target}
			if len(args) > 1 {
				ec.Command = args[1:]
			}
			// As kubectl's two-way merge patch: the new container, and the
			// order of all of them (the server puts a new item first
			// otherwise).
			order := []map[string]string{}
			for _, e := range ref.pod.Spec.EphemeralContainers {
				order = append(order, map[string]string{"name": e.Name})
			}
			order = append(order, map[string]string{"name": name})
			patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": []core.EphemeralContainer{ec},
				"$setElementOrder/ephemeralContainers": order}})
			if err != nil {
				return err
			}
			pk, _ := scheme.ByResource("pods")
			if _, err := c.Resource(pk).Patch(ctx, ref.pod.Namespace, ref.pod.Name, client.StrategicMergePatch, patch, client.PatchOptions{Subresource: "ephemeralcontainers"}); err != nil {
				return err
			}
			if !attach {
				fmt.Fprintf(o.Out, "pod/%s: ephemeral container %s added\n", ref.pod.Name, name)
				return nil
			}
			if err := waitStarted(ctx, c, ref.pod, name); err != nil {
				return err
			}
			logs, err := c.PodLogs(ctx, ref.pod.Namespace, ref.pod.Name, client.LogOptions{Container: name, Follow: true})
			if err != nil {
				return err
			}
			_, err = io.Copy(o.Out, logs)
			return err
		},
	}
	cmd.Flags().StringVar(&image, "image", "", "the debugging container's image")
	cmd.Flags().StringVarP(&name, "container", "c", "", "the debugging container's name (default debugger-<random>)")
	cmd.Flags().StringVar(&target, "target", "", "share the process namespace of this container of the pod")
	cmd.Flags().StringVar(&pull, "image-pull-policy", "", "Always, IfNotPresent or Never (default: Kubernetes' for the image's tag)")
	cmd.Flags().BoolVar(&attach, "attach", false, "wait until the container runs and print what it writes until it exits")
	cmd.Flags().BoolVarP(&stdin, "stdin", "i", false, "refused: Kobune's containers have no standard input")
	cmd.Flags().BoolVarP(&tty, "tty", "t", false, "refused: Kobune's containers have no terminal")
	return cmd
}

// waitStarted waits until the pod's ephemeral container name has started
// (or already ended), or says why it waits.
func waitStarted(ctx context.Context, c *client.Client, pod *core.Pod, name string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err := client.WaitFor(ctx, client.For[*core.Pod](c), pod.Namespace, pod.Name, 0, func(p *core.Pod, _ bool) bool {
		for _, cs := range p.Status.EphemeralContainerStatuses {
			if cs.Name == name && (cs.State.Running != nil || cs.State.Terminated != nil) {
				return true
			}
		}
		return false
	})
	if err != nil {
		return fmt.Errorf("ephemeral container %s of pod %s did not start within 2 minutes (kobectl describe pod %s): %w", name, pod.Name, pod.Name, err)
	}
	return nil
}

func randomSuffix() string {
	const letters = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	for i := range b {
		b[i] = letters[rand.IntN(len(letters))]
	}
	return string(b)
}
