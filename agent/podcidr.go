package agent

import (
	"context"
	"log"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kobune/kobune/agent/node"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/client"
)

// The node's pod CIDR across restarts. Without --pod-cidr the agent asks
// the API for the one kobune-controller allocated (node IPAM) and keeps it
// in its state directory (<state-dir>/pod-cidr): after a reboot the
// control plane may not answer yet — a whole cluster powered on at once,
// or a worker rebooting while the control plane is down — and the pods
// must come back in the range the other nodes route to this one, not in a
// stand-in range. The kubelet reads spec.podCIDR from its Node the same
// way and does not start the pod network without it.

// podCIDRFile is where the pod CIDR is kept ("" without a state
// directory: a simulated node given none).
func (c *Command) podCIDRFile() string {
	if c.StateDir == "" {
		return ""
	}
	return filepath.Join(c.StateDir, "pod-cidr")
}

// podCIDR is the node's pod CIDR when --pod-cidr gives none: the Node's,
// if the API answers within a few seconds and the Node has one; else the
// one kept from an earlier start; else the one kobune-controller
// allocates (AwaitPodCIDR). What it returns is kept for the next start.
func (c *Command) podCIDR(ctx context.Context, cl *client.Client, cfg node.Config) string {
	file := c.podCIDRFile()
	kept := ""
	if file != "" {
		if b, err := os.ReadFile(file); err == nil {
			if s := strings.TrimSpace(string(b)); validCIDR(s) {
				kept = s
			} else {
				log.Printf("kobune-agent: %s holds %q, not a CIDR: ignored", file, s)
			}
		}
	}
	cidr := ""
	if kept != "" {
		qctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		n, err := client.For[*core.Node](cl).Get(qctx, "", cfg.Name)
		cancel()
		switch {
		case err == nil && n.Spec.PodCIDR != "" && n.Spec.PodCIDR != kept:
			log.Printf("kobune-agent: node %s's pod CIDR is %s now (it was %s when kept in %s): using %s", cfg.Name, n.Spec.PodCIDR, kept, file, n.Spec.PodCIDR)
			cidr = n.Spec.PodCIDR
		case err != nil && !client.IsNotFound(err):
			log.Printf("kobune-agent: pod CIDR %s, kept from an earlier start in %s (the API does not answer yet: %s)", kept, file, client.Message(err))
			cidr = kept
		default:
			log.Printf("kobune-agent: pod CIDR %s (kept from an earlier start in %s)", kept, file)
			cidr = kept
		}
	} else {
		cidr = AwaitPodCIDR(ctx, cl, cfg, 30*time.Second)
	}
	if file != "" && cidr != kept {
		err := os.MkdirAll(filepath.Dir(file), 0o755)
		if err == nil {
			err = writeAtomic(file, []byte(cidr+"\n"))
		}
		if err != nil {
			log.Printf("kobune-agent: keeping the pod CIDR in %s: %v (after a reboot the agent asks the API again)", file, err)
		}
	}
	return cidr
}

func validCIDR(s string) bool {
	_, _, err := net.ParseCIDR(s)
	return err == nil
}
