package rollout

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/autoscaling"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// NewCmdAutoscale is kubectl autoscale: a HorizontalPodAutoscaler
// (autoscaling/v2) for a Deployment, ReplicaSet or StatefulSet.
func NewCmdAutoscale(o *cmdutil.Options) *cobra.Command {
	var minReplicas, maxReplicas, cpuPercent int32
	var cpu, memory, name string
	cmd := &cobra.Command{
		Use:   "autoscale TYPE/NAME --max=N [--min=N] [--cpu=50%|500m] [--memory=80%|256Mi]",
		Short: "Make a HorizontalPodAutoscaler for a Deployment, ReplicaSet or StatefulSet (kubectl autoscale)",
		Long: `Make a HorizontalPodAutoscaler that keeps the target between --min and
--max replicas so that its pods' average CPU (or memory) meets the target:
a percentage of their requests (--cpu=50%) or a quantity per pod
(--cpu=500m). Without a target, CPU at 80 % of the requests. The
kobune-controller evaluates it every 15 s from the metrics API.`,
		Example: `  # Between 1 and 5 replicas, CPU at half the requests
  kobectl autoscale deployment/web --min=1 --max=5 --cpu=50%`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, names, err := o.ParseTarget(args)
			if err != nil {
				return err
			}
			if k.Kind != "Deployment" && k.Kind != "ReplicaSet" && k.Kind != "StatefulSet" && k.Kind != "ReplicationController" {
				return fmt.Errorf("%s cannot be autoscaled: only deployments, replicasets, statefulsets and replicationcontrollers have a scale subresource", k.Resource)
			}
			if len(names) != 1 {
				return fmt.Errorf("autoscale one object at a time")
			}
			if maxReplicas < 1 {
				return fmt.Errorf("--max is required and must be at least 1")
			}
			h := &autoscaling.HorizontalPodAutoscaler{ObjectMeta: meta.ObjectMeta{Name: names[0], Namespace: o.NamespaceFor(k, false)},
				Spec: autoscaling.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscaling.CrossVersionObjectReference{Kind: k.Kind, Name: names[0], APIVersion: k.APIVersion},
					MaxReplicas: maxReplicas}}
			if name != "" {
				h.Name = name
			}
			if minReplicas > 0 {
				h.Spec.MinReplicas = &minReplicas
			}
			if cpuPercent > 0 {
				if cpu != "" {
					return fmt.Errorf("--cpu-percent and --cpu: give one")
				}
				cpu = strconv.Itoa(int(cpuPercent)) + "%"
			}
			for _, t := range []struct {
				flag, value string
				name        resource.Name
			}{{"--cpu", cpu, resource.CPU}, {"--memory", memory, resource.Memory}} {
				if t.value == "" {
					continue
				}
				m := autoscaling.MetricSpec{Type: autoscaling.ResourceMetricSourceType, Resource: &autoscaling.ResourceMetricSource{Name: t.name}}
				if pct, ok := strings.CutSuffix(t.value, "%"); ok {
					n, err := strconv.Atoi(pct)
					if err != nil || n < 1 {
						return fmt.Errorf("%s=%s: a percentage of the requests above 0, such as 50%%", t.flag, t.value)
					}
					u := int32(n)
					m.Resource.Target = autoscaling.MetricTarget{Type: autoscaling.UtilizationMetricType, AverageUtilization: &u}
				} else {
					q, err := resource.ParseQuantity(t.value)
					if err != nil {
						return fmt.Errorf("%s=%s: a percentage (50%%) or a quantity per pod (500m, 256Mi): %v", t.flag, t.value, err)
					}
					m.Resource.Target = autoscaling.MetricTarget{Type: autoscaling.AverageValueMetricType, AverageValue: &q}
				}
				h.Spec.Metrics = append(h.Spec.Metrics, m)
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			if _, err := client.For[*autoscaling.HorizontalPodAutoscaler](c).Create(ctx, h); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "horizontalpodautoscaler.autoscaling/%s autoscaled\n", h.Name)
			return nil
		},
	}
	cmd.Flags().Int32Var(&minReplicas, "min", -1, "the fewest replicas (default 1)")
	cmd.Flags().Int32Var(&maxReplicas, "max", -1, "the most replicas (required)")
	cmd.Flags().Int32Var(&cpuPercent, "cpu-percent", -1, "CPU target as a percentage of the requests (kubectl's older flag; see --cpu)")
	cmd.Flags().StringVar(&cpu, "cpu", "", "CPU target: a percentage of the requests (50%) or a quantity per pod (500m)")
	cmd.Flags().StringVar(&memory, "memory", "", "memory target: a percentage of the requests (80%) or a quantity per pod (256Mi)")
	cmd.Flags().StringVar(&name, "name", "", "the autoscaler's name (default: the target's)")
	return cmd
}
