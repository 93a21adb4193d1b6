// Package top is kobectl top: nodes' and pods' CPU and memory from the
// metrics API. It mirrors kubectl's pkg/cmd/top.
package top
