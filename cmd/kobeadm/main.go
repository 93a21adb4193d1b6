// Command kobeadm installs Kobune on machines, as kubeadm installs
// Kubernetes (package installer).
package main

import (
	"os"

	"github.com/kobune/kobune/installer"
)

func main() {
	os.Exit(installer.Run(os.Args[1:], os.Stdout, os.Stderr))
}
