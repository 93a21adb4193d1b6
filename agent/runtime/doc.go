// Package runtime is the narrow interface the node agent needs from a
// container runtime — run a pod's sandbox and containers, stop them, say
// what is running — and its implementations. It plays the part of the CRI
// (Container Runtime Interface) between the kubelet and containerd, kept to
// the few methods Kobune uses.
//
// Fake is the simulated runtime for scale and controller tests
// (`kobune-agent --runtime fake`): pods "run" at once with a made-up IP and
// nothing is started. The containerd runtime arrives with the rest of issue #3.
package runtime
