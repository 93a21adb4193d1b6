package framework

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kobune/kobune/api/core"
)

// PodPriority is the pod's spec.priority (0 when unset).
func PodPriority(p *core.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// FitErrorMessage is kube-scheduler's FitError message: "0/3 nodes are
// available: 1 node(s) had untolerated taint ..., 2 Insufficient cpu.",
// reasons counted per node and sorted; or the PreFilter's message when one
// ruled out every node.
func FitErrorMessage(nodes int, reasons map[string]int, preFilter string) string {
	if preFilter != "" {
		return fmt.Sprintf("0/%d nodes are available: %s.", nodes, preFilter)
	}
	parts := make([]string, 0, len(reasons))
	for r, n := range reasons {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	msg := fmt.Sprintf("0/%d nodes are available", nodes)
	if len(parts) > 0 {
		msg += ": " + strings.Join(parts, ", ")
	}
	return msg + "."
}
