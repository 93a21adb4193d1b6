// Package scheduling holds PriorityClass ("scheduling.k8s.io/v1"): a named
// priority value that pods refer to with priorityClassName.
package scheduling
