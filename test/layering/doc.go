// Package layering holds the test of Kobune's layering rule (see
// docs/architecture.md): api → client → components (apiserver, scheduler,
// controller, agent) → ctl → cmd. No component imports another; kobectl
// links neither etcd nor containerd. Beside it, the hygiene the tree keeps
// (no compiled binary tracked).
package layering
