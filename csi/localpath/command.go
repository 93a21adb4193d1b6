package localpath

import (
	"context"
	"errors"
	"flag"
	"log"
	"path/filepath"
	"sync"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/csi/provisioner"
)

// Command is kobune-csi-local's flags: the driver on its socket, and
// (unless --provisioner=false) the provisioner beside it, talking to the
// driver through that socket as Kubernetes' external-provisioner sidecar
// does.
type Command struct {
	Endpoint    string
	NodeID      string
	DataDir     string
	Server      string
	Kubeconfig  string
	Provisioner bool
}

// Register adds the flags to fs.
func (c *Command) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.NodeID, "node-id", "", "this node's name (required)")
	fs.StringVar(&c.DataDir, "data-dir", "", "where volumes are made: DIR/volumes/<name> (default /var/lib/kobune/csi-local/NODE)")
	fs.StringVar(&c.Endpoint, "endpoint", "", "the CSI socket the agent finds: <agent state dir>/plugins/"+Name+"/csi.sock (default /var/lib/kobune/agent/NODE/plugins/"+Name+"/csi.sock)")
	fs.StringVar(&c.Server, "server", "127.0.0.1:6443", "API server address (for the provisioner)")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "a kubeconfig with the API server's https:// address, its CA and this component's certificate (instead of --server, plaintext)")
	fs.BoolVar(&c.Provisioner, "provisioner", true, "also run the provisioner for this node (CreateVolume/DeleteVolume for claims of classes whose provisioner is "+Name+")")
}

// Run serves until ctx ends.
func (c *Command) Run(ctx context.Context) error {
	if c.NodeID == "" {
		return errors.New("--node-id is required (the node's name, as the agent registers it)")
	}
	if c.DataDir == "" {
		c.DataDir = filepath.Join("/var/lib/kobune/csi-local", c.NodeID)
	}
	if c.Endpoint == "" {
		c.Endpoint = filepath.Join("/var/lib/kobune/agent", c.NodeID, "plugins", Name, "csi.sock")
	}
	d := &Driver{NodeID: c.NodeID, Dir: c.DataDir}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var provErr error
	if c.Provisioner {
		cl, err := client.Dial(c.Server, c.Kubeconfig)
		if err != nil {
			return err
		}
		defer cl.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			provErr = provisioner.Run(ctx, cl, provisioner.Config{NodeName: c.NodeID, CSIAddress: c.Endpoint})
			if provErr != nil {
				cancel()
			}
		}()
	}
	log.Printf("kobune-csi-local: %s for node %s on %s, volumes in %s", Name, c.NodeID, c.Endpoint, filepath.Join(c.DataDir, "volumes"))
	err := Serve(ctx, d, c.Endpoint)
	cancel()
	wg.Wait()
	return errors.Join(err, provErr)
}
