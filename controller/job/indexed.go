package job

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
)

// Indexed Jobs (completionMode: Indexed): one pod per index 0..completions-1,
// named <job>-<index>-<random>, with the index in the annotation and label
// batch.kubernetes.io/job-completion-index, in the env var
// JOB_COMPLETION_INDEX and in the hostname <job>-<index>, as Kubernetes
// does. The Job is complete when every index has a succeeded pod;
// status.completedIndexes lists them ("0-2,5").

// podIndex is a pod's completion index, or -1.
func podIndex(p *core.Pod) int {
	i, err := strconv.Atoi(p.Annotations[batch.JobCompletionIndexAnnotation])
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// succeededIndexes is the set of indexes below completions with a succeeded pod.
func succeededIndexes(j *batch.Job, succeeded []*core.Pod) map[int]bool {
	out := map[int]bool{}
	for _, p := range succeeded {
		if i := podIndex(p); i >= 0 && i < int(*j.Spec.Completions) {
			out[i] = true
		}
	}
	return out
}

// formatIndexes writes a set of indexes as Kubernetes does: "0-2,5".
func formatIndexes(set map[int]bool) string {
	var l []int
	for i := range set {
		l = append(l, i)
	}
	slices.Sort(l)
	var parts []string
	for k := 0; k < len(l); {
		e := k
		for e+1 < len(l) && l[e+1] == l[e]+1 {
			e++
		}
		if e == k {
			parts = append(parts, strconv.Itoa(l[k]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", l[k], l[e]))
		}
		k = e + 1
	}
	return strings.Join(parts, ",")
}

// manageIndexed keeps one active pod for each index that has neither
// succeeded nor failed for good, at most parallelism at once, lowest
// indexes first; extra pods (two for an index, or one for an index
// already done) are deleted. holding are the pods that keep their index
// from being started again: the active ones, and with podReplacementPolicy
// Failed also those being deleted.
func (jc *Controller) manageIndexed(ctx context.Context, j *batch.Job, done, failed map[int]bool, holding []*core.Pod, want int32) error {
	key := meta.Key(j)
	running := map[int]bool{}
	var extra []*core.Pod
	for _, p := range holding {
		i := podIndex(p)
		if i < 0 || i >= int(*j.Spec.Completions) || done[i] || failed[i] || running[i] {
			if p.DeletionTimestamp == nil {
				extra = append(extra, p)
			}
			continue
		}
		running[i] = true
	}
	if len(extra) > 0 {
		jc.exp.Expect(key, 0, len(extra))
		jc.deletePods(ctx, j, extra)
	}
	var missing []int
	for i := range int(*j.Spec.Completions) {
		if !done[i] && !failed[i] && !running[i] && len(running)+len(missing) < int(want) {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	jc.exp.Expect(key, len(missing), 0)
	for n, i := range missing {
		if err := jc.createPod(ctx, j, i); err != nil {
			for range len(missing) - n {
				jc.exp.Observed(key, true)
			}
			return err
		}
	}
	return nil
}

// indexPod makes the template's pod the one for index i.
func indexPod(p *core.Pod, j *batch.Job, i int) {
	idx := strconv.Itoa(i)
	p.GenerateName = fmt.Sprintf("%s-%d-", j.Name, i)
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[batch.JobCompletionIndexAnnotation] = idx
	p.Labels[batch.JobCompletionIndexAnnotation] = idx
	if p.Spec.Hostname == "" {
		p.Spec.Hostname = fmt.Sprintf("%s-%d", j.Name, i)
	}
	env := core.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &core.EnvVarSource{FieldRef: &core.ObjectFieldSelector{
		FieldPath: "metadata.annotations['" + batch.JobCompletionIndexAnnotation + "']"}}}
	// The containers are the cached Job's: copy them before changing.
	p.Spec.InitContainers, p.Spec.Containers = slices.Clone(p.Spec.InitContainers), slices.Clone(p.Spec.Containers)
	for _, cs := range [][]core.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for k := range cs {
			cs[k].Env = append(slices.Clone(cs[k].Env), env)
		}
	}
}
