// Command helm is the real Helm CLI, built from the helm.sh/helm/v4
// module at the version test/compat/go.mod pins, for TestHelmLifecycle
// (and for anyone who wants to try Kobune with Helm: go build -o helm
// ./helm in test/compat).
package main

import (
	"errors"
	"os"

	_ "k8s.io/client-go/plugin/pkg/client/auth" // client-go's credential plugins, as helm has them

	helmcmd "helm.sh/helm/v4/pkg/cmd"
	"helm.sh/helm/v4/pkg/kube"
)

func main() {
	kube.ManagedFieldsManager = "helm" // the field manager Helm's own binary writes as
	root, err := helmcmd.NewRootCmd(os.Stdout, os.Args[1:], helmcmd.SetupLogging)
	if err != nil {
		os.Stderr.WriteString("helm: " + err.Error() + "\n")
		os.Exit(1)
	}
	if err := root.Execute(); err != nil {
		var ce helmcmd.CommandError
		if errors.As(err, &ce) {
			os.Exit(ce.ExitCode)
		}
		os.Exit(1)
	}
}
