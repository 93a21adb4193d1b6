// Package runtime is the narrow interface the node agent needs from a
// container runtime — run a pod's sandbox and containers, stop them, say
// what is running — and its implementations. It plays the part of the CRI
// (Container Runtime Interface) between the kubelet and containerd, kept to
// the few methods Kobune uses.
//
// Containerd runs pods on a containerd daemon (one containerd container per
// pod container, all in the pod's network namespace), labelling them so a
// restarted agent adopts them. Fake is the simulated runtime for scale and
// controller tests (`kobune-agent --runtime fake`): pods "run" at once with a
// made-up IP and nothing is started.
package runtime
