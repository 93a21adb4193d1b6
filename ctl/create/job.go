package create

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

func newCreateJobCommand(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var image, from string
	cmd := &cobra.Command{
		Use:   "job NAME (--image=IMAGE [-- COMMAND [ARG...]] | --from=cronjob/NAME)",
		Short: "Create a Job, from an image or from a CronJob's template (kubectl create job)",
		Example: `  # A Job of one pod running a command
  kobectl create job hello --image=kobune.local/busybox:1.35 -- echo hello

  # Run a CronJob now
  kobectl create job backup-now --from=cronjob/backup`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			job := &batch.Job{TypeMeta: meta.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta.ObjectMeta{Name: name}}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			switch {
			case (image == "") == (from == ""):
				return fmt.Errorf("give --image or --from=cronjob/NAME, one of them")
			case from != "":
				kind, cjName, ok := strings.Cut(from, "/")
				if !ok || (kind != "cronjob" && kind != "cronjobs" && kind != "cj") {
					return fmt.Errorf("--from %q: want cronjob/NAME", from)
				}
				c, err := o.Client()
				if err != nil {
					return err
				}
				cj, err := client.For[*batch.CronJob](c).Get(ctx, o.NamespaceOrDefault(), cjName)
				if err != nil {
					return err
				}
				job.Spec = cj.Spec.JobTemplate.Spec
				job.Labels = cj.Spec.JobTemplate.Labels
				job.Annotations = map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}
				ctrl := true
				job.OwnerReferences = []meta.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &ctrl}}
			default:
				ctr := core.Container{Name: name, Image: image}
				if dash := cmd.ArgsLenAtDash(); dash >= 0 && len(args) > dash {
					ctr.Command = args[dash:]
				}
				job.Spec.Template.Spec = core.PodSpec{Containers: []core.Container{ctr}, RestartPolicy: core.RestartPolicyNever}
			}
			return emit(o, ctx, job, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&image, "image", "", "the image of the Job's container")
	cmd.Flags().StringVar(&from, "from", "", "cronjob/NAME: a Job from that CronJob's template")
	return cmd
}
