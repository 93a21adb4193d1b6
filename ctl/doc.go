// Package ctl is kobectl, Kobune's kubectl: kubectl's verbs (apply,
// create and its generators, get, describe, edit, patch, delete, logs,
// exec, attach, port-forward, rollout, scale, label, annotate, drain,
// top, auth, config, explain, api-resources ...) with kubectl's flags,
// output formats and table columns, so that habits and scripts carry
// over — and Kobune's extras (explain-path for a packet's way through
// Services, Ingresses and NetworkPolicies; pki; every node's verdict in a
// Pending pod's describe). As kubectl's pkg/cmd, each verb family is a
// package (apply, create, get, describe, delete, wait, rollout, podio,
// drain, explain, explainpath, auth, config, pki, token, top) on what they
// all share (cmdutil); this package assembles the command tree
// (root.go). `kobectl --help` is the list of verbs that is always true.
package ctl
