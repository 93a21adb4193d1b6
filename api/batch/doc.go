// Package batch holds the run-to-completion kinds of the "batch/v1" group:
// Job and CronJob, shaped like Kubernetes' k8s.io/api/batch/v1.
package batch
