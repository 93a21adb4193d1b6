// Package probe runs liveness, readiness and startup probes (httpGet,
// tcpSocket, exec) for each running container, as the kubelet's prober
// does: after initialDelaySeconds, every periodSeconds, each attempt limited
// to timeoutSeconds; a result flips after successThreshold successes or
// failureThreshold failures in a row. Startup holds the other two off until
// it succeeds. The agent turns readiness into the Ready condition and kills
// containers whose liveness (or startup) probe fails.
package probe
