package plugins

import "github.com/kobune/kobune/scheduler/framework"

// normalize rescales scores to 0–100 by the largest; reverse makes the
// smallest raw score the best.
func normalize(scores []int64, reverse bool) {
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

// normalizeRange rescales scores so the smallest becomes 0 and the largest
// 100 (reverse: the smallest 100); all 0 when they are equal.
func normalizeRange(scores []int64, reverse bool) {
	if len(scores) == 0 {
		return
	}
	lo, hi := scores[0], scores[0]
	for _, s := range scores {
		lo, hi = min(lo, s), max(hi, s)
	}
	for i, s := range scores {
		switch {
		case hi == lo:
			scores[i] = 0
		case reverse:
			scores[i] = (hi - s) * framework.MaxNodeScore / (hi - lo)
		default:
			scores[i] = (s - lo) * framework.MaxNodeScore / (hi - lo)
		}
	}
}
