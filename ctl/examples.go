package ctl

import "github.com/spf13/cobra"

// examples are the Examples sections of the commands whose files do not
// set one themselves; addExamples fills them in, so that every --help has
// one (a test checks it).
var examples = map[string]string{
	"kobectl api-resources": `  # Every kind the API serves, with short names and whether it is namespaced
  kobectl api-resources`,
	"kobectl apply": `  # Create or update what a file describes
  kobectl apply -f deploy/examples/web.yaml

  # Every manifest of a directory, checked by the server only
  kobectl apply -f deploy/examples/ --dry-run=server

  # Server-side apply, taking over fields another manager owns
  kobectl apply -f web.yaml --server-side --force-conflicts`,
	"kobectl auth can-i": `  # May I create deployments in namespace team?
  kobectl auth can-i create deployments -n team

  # May user dev exec into pods?
  kobectl auth can-i create pods --subresource exec --as dev

  # Everything I may do in namespace team
  kobectl auth can-i --list -n team`,
	"kobectl auth whoami": `  # The user and groups the API server sees
  kobectl auth whoami`,
	"kobectl certificate approve": `  # Let a node that asked for a client certificate join
  kobectl certificate approve csr-x7k2p`,
	"kobectl certificate deny":       `  kobectl certificate deny csr-x7k2p`,
	"kobectl config current-context": `  kobectl config current-context`,
	"kobectl config get-contexts":    `  kobectl config get-contexts`,
	"kobectl config set-context": `  # Make demo the default namespace of the current context
  kobectl config set-context --current --namespace demo`,
	"kobectl config use-context": `  kobectl config use-context lab`,
	"kobectl config view":        `  kobectl config view`,
	"kobectl create": `  # Create what a file describes; an object that exists is an error
  kobectl create -f deploy/examples/web.yaml

  # Generators: see kobectl create deployment --help and the others below
  kobectl create deployment web --image=kobune.local/labapp:1.0`,
	"kobectl create clusterrolebinding": `  # Make user ops a cluster administrator
  kobectl create clusterrolebinding ops-admin --clusterrole cluster-admin --user ops`,
	"kobectl create namespace": `  kobectl create namespace team`,
	"kobectl create rolebinding": `  # Let ServiceAccount demo:reader read namespace demo
  kobectl create rolebinding reader --clusterrole view --serviceaccount demo:reader -n demo`,
	"kobectl create serviceaccount": `  kobectl create serviceaccount reader -n demo`,
	"kobectl create token": `  # A token of ServiceAccount reader, valid for 2 hours
  kobectl create token reader -n demo --duration 2h`,
	"kobectl delete": `  # A pod, waiting until its containers have stopped
  kobectl delete pod web-0

  # Every ConfigMap labelled tier=b, and what a file describes
  kobectl delete cm -l tier=b
  kobectl delete -f deploy/examples/web.yaml

  # A Deployment, leaving its ReplicaSets and pods in place
  kobectl delete deploy/web --cascade=orphan`,
	"kobectl describe": `  # A pod: containers, conditions, volumes, the scheduler's decision, events
  kobectl describe pod web-0

  # A node: conditions, capacity, its pods and what they ask for
  kobectl describe node node-1`,
	"kobectl explain-path": `  # The nftables rules a packet to Service web takes on node-1
  kobectl explain-path svc/web -n demo --node node-1

  # May pod client reach pod db on 5432? Which policy allows it, or what is missing
  kobectl explain-path pod/client --to pod/db --port 5432 -n demo

  # The same through a Service: each endpoint judged after the DNAT
  kobectl explain-path pod/client --to svc/db --port 5432 -n demo

  # A request through an Ingress: rule, TLS, endpoints, policies
  kobectl explain-path ingress/web -n demo --host web.lab.test --path /`,
	"kobectl pki init": `  # The lab's certificates and kubeconfigs, in /etc/kobune/pki
  kobectl pki init --dir /etc/kobune/pki --apiserver-url https://172.31.0.1:6443 --node node-1 --node node-2`,
	"kobectl replace": `  # Replace an object with the file's version (its resourceVersion, if set, must still be current)
  kobectl replace -f web.yaml`,
	"kobectl rollout history": `  kobectl rollout history deployment/web
  kobectl rollout history deployment/web --revision=2`,
	"kobectl rollout pause":   `  kobectl rollout pause deployment/web`,
	"kobectl rollout restart": `  kobectl rollout restart deployment/web`,
	"kobectl rollout resume":  `  kobectl rollout resume deployment/web`,
	"kobectl rollout status": `  # Follow a rolling update until it is done
  kobectl rollout status deployment/web -n demo`,
	"kobectl rollout undo": `  # Back to the previous revision, or to revision 1
  kobectl rollout undo deployment/web
  kobectl rollout undo deployment/web --to-revision=1`,
	"kobectl scale": `  kobectl scale deployment/web --replicas=3
  kobectl scale statefulset/db --replicas=1`,
	"kobectl set image": `  # A rolling update to labapp 2.0 of container web
  kobectl set image deployment/web web=kobune.local/labapp:2.0 -n demo`,
	"kobectl token create": `  # A bootstrap token a new node joins with, and a kubeconfig holding it
  kobectl token create --kubeconfig-out join.kubeconfig`,
	"kobectl version": `  kobectl version`,
}

// addExamples fills in the Examples of commands that have none.
func addExamples(c *cobra.Command) {
	if c.Example == "" {
		c.Example = examples[c.CommandPath()]
	}
	for _, sub := range c.Commands() {
		addExamples(sub)
	}
}
