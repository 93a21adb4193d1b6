// Command kubectl is the real kubectl, built from the k8s.io/kubectl
// module at the version test/compat/go.mod pins, for the compatibility
// tests (and for anyone who wants to compare: go build -o kubectl ./kubectl
// in test/compat).
package main

import (
	"os"

	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	command := cmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		util.CheckErr(err)
	}
	os.Exit(0)
}
