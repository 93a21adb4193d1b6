// Package wait is kobectl wait and events: waiting until objects meet a
// condition (a condition type, deletion, a JSONPath value), and the
// cluster's events listed or watched. It mirrors kubectl's pkg/cmd/wait
// and events.
package wait
