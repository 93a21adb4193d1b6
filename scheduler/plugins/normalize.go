package plugins

import "github.com/kobune/kobune/scheduler/framework"

// normalize rescales scores to 0–100 by the largest; reverse makes the
// smallest raw score the best.
func normalize(scores map[string]int64, reverse bool) {
	var top int64
	for _, s := range scores {
		top = max(top, s)
	}
	for k, s := range scores {
		switch {
		case top == 0 && reverse:
			scores[k] = framework.MaxNodeScore
		case top == 0:
			scores[k] = 0
		case reverse:
			scores[k] = framework.MaxNodeScore - s*framework.MaxNodeScore/top
		default:
			scores[k] = s * framework.MaxNodeScore / top
		}
	}
}
