package installer

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	containerd "github.com/containerd/containerd/v2/client"
	"github.com/containerd/containerd/v2/core/images"
	"github.com/containerd/containerd/v2/core/leases"
	"github.com/containerd/containerd/v2/core/snapshots"
	"github.com/containerd/containerd/v2/pkg/namespaces"
	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// What an install makes on a machine beyond its files: reset removes
// each. The names are the agent's (agent/command.go and its packages);
// a test on the VM lab diffs a machine before init and after reset.
const (
	ContainerdNamespace = "kobune" // the agent's --containerd-namespace
	ContainerdSocket    = "/run/containerd/containerd.sock"
	PodBridge           = "kobune0" // the CNI bridge
	RouteProto          = "199"     // routes the agent adds (pod CIDRs of other nodes, the Service range)
	NetnsPrefix         = "kobune-" // pods' network namespaces, /run/netns/kobune-<uid>
	CgroupName          = "kobune"  // pods' cgroups, /sys/fs/cgroup[/<controller>]/kobune
)

// NftTables are the agent's nftables tables (family ip).
var NftTables = []string{"kobune-proxy", "kobune-netpol"}

// Units are the systemd units an install writes.
var Units = []string{"kobune-csi-local", "kobune-agent", "kobune-controller", "kobune-scheduler", "kobune-apiserver"}

// ResetPhases are kobeadm reset's phases: each undoes one kind of thing an
// install made, and says what it removed; each is safe to run again (what
// is already gone is skipped).
func ResetPhases() []Phase {
	return []Phase{
		{"stop-units", "stop and remove the units (" + strings.Join(Units, ", ") + ")", stopUnits},
		{"remove-pods", "kill every container of containerd's " + ContainerdNamespace + " namespace and remove the namespace (its containers, images, snapshots)", removePods},
		{"cleanup-network", "remove the pods' network namespaces, the " + PodBridge + " bridge, the agent's routes and nftables tables", cleanupNetwork},
		{"cleanup-cgroups", "remove the pods' cgroups (" + CgroupName + " in every hierarchy)", cleanupCgroups},
		{"unmount", "unmount what the agent mounted under " + VarDir + " (pods' tmpfs and CSI volumes)", unmountAll},
		{"remove-files", "remove " + EtcDir + ", " + VarDir + " and the binaries in " + BinDir, removeFiles},
	}
}

// Reset asks first unless force, then runs every phase; a phase's error
// is reported and the next runs (a half-installed machine is reset as far
// as it can be).
func Reset(ctx context.Context, c *Config, force bool, in io.Reader) error {
	if !force {
		fmt.Fprintf(c.Out, "[reset] This machine's Kobune install will be removed: its units, pods, state, certificates and %s (a control plane's etcd: the cluster's whole state).\n[reset] Are you sure you want to proceed? [y/N]: ", VarDir)
		answer, _ := bufio.NewReader(in).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			return errors.New("aborted: nothing was changed (kobeadm reset --force asks no question)")
		}
	}
	var failed []string
	for _, p := range ResetPhases() {
		if err := RunPhases(ctx, c, []Phase{p}); err != nil {
			fmt.Fprintf(c.Out, "[%s] %v\n", p.Name, err)
			failed = append(failed, p.Name)
		}
	}
	if len(failed) > 0 {
		return fmt.Errorf("reset phases %s failed (see above): fix what they say and run kobeadm reset again", strings.Join(failed, ", "))
	}
	fmt.Fprintf(c.Out, "\nKobune is removed from this machine. On the control plane, kobectl delete node %s removes its Node object.\n", c.NodeName)
	return nil
}

func stopUnits(_ context.Context, c *Config) error {
	var removed []string
	for _, u := range Units {
		path := filepath.Join(UnitDir, u+".service")
		if _, err := os.Stat(path); err != nil {
			continue
		}
		_ = c.Systemctl("disable", "--now", u) // a unit that does not run is fine
		if err := os.Remove(path); err != nil {
			return err
		}
		removed = append(removed, u)
	}
	if len(removed) == 0 {
		fmt.Fprintln(c.Out, "\tno unit of Kobune's")
		return nil
	}
	if err := c.Systemctl("daemon-reload"); err != nil {
		return err
	}
	_ = c.Systemctl(append([]string{"reset-failed"}, removed...)...)
	fmt.Fprintf(c.Out, "\tstopped and removed %s\n", strings.Join(removed, ", "))
	return nil
}

func removePods(ctx context.Context, c *Config) error {
	if _, err := os.Stat(ContainerdSocket); err != nil {
		fmt.Fprintf(c.Out, "\tcontainerd is not running (%s): nothing to remove there\n", ContainerdSocket)
		return nil
	}
	cl, err := containerd.New(ContainerdSocket, containerd.WithTimeout(10*time.Second))
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	defer cl.Close()
	nss, err := cl.NamespaceService().List(ctx)
	if err != nil {
		return fmt.Errorf("containerd: %w", err)
	}
	if !slices.Contains(nss, ContainerdNamespace) {
		fmt.Fprintf(c.Out, "\tcontainerd has no %s namespace\n", ContainerdNamespace)
		return nil
	}
	ctx = namespaces.WithNamespace(ctx, ContainerdNamespace)
	cs, err := cl.Containers(ctx)
	if err != nil {
		return err
	}
	for _, ct := range cs {
		if task, err := ct.Task(ctx, nil); err == nil {
			_ = task.Kill(ctx, syscall.SIGKILL)
			if _, err := task.Delete(ctx, containerd.WithProcessKill); err != nil {
				return fmt.Errorf("container %s: delete its task: %w", ct.ID(), err)
			}
		}
		if err := ct.Delete(ctx, containerd.WithSnapshotCleanup); err != nil {
			return fmt.Errorf("container %s: %w", ct.ID(), err)
		}
	}
	imgs, err := cl.ImageService().List(ctx)
	if err != nil {
		return err
	}
	for _, img := range imgs {
		if err := cl.ImageService().Delete(ctx, img.Name, images.SynchronousDelete()); err != nil {
			return fmt.Errorf("image %s: %w", img.Name, err)
		}
	}
	ls, err := cl.LeasesService().List(ctx)
	if err != nil {
		return err
	}
	for _, l := range ls {
		if err := cl.LeasesService().Delete(ctx, l, leases.SynchronousDelete); err != nil {
			return fmt.Errorf("lease %s: %w", l.ID, err)
		}
	}
	// What no image or lease holds any more goes with the namespace's
	// garbage collection; snapshots left by a crash are removed by key.
	sn := cl.SnapshotService("overlayfs") // the agent's snapshotter
	for i := 0; i < 10; i++ {
		var keys []string
		_ = sn.Walk(ctx, func(_ context.Context, info snapshots.Info) error { keys = append(keys, info.Name); return nil })
		if len(keys) == 0 {
			break
		}
		for _, k := range keys {
			_ = sn.Remove(ctx, k) // a parent goes once its children have
		}
	}
	// containerd's and runc's directories of the namespace's tasks
	// (/run/containerd/io.containerd.runtime.v2.task/kobune,
	// /run/containerd/runc/kobune) are empty once its tasks are gone.
	for _, d := range []string{"io.containerd.runtime.v2.task", "runc"} {
		_ = os.Remove(filepath.Join(filepath.Dir(ContainerdSocket), d, ContainerdNamespace))
	}
	if err := cl.NamespaceService().Delete(namespaces.WithNamespace(context.Background(), ""), ContainerdNamespace); err != nil {
		return fmt.Errorf("containerd namespace %s: %w (ctr -n %s containers ls shows what is left)", ContainerdNamespace, err, ContainerdNamespace)
	}
	fmt.Fprintf(c.Out, "\tremoved %d containers, %d images and containerd's %s namespace\n", len(cs), len(imgs), ContainerdNamespace)
	return nil
}

func cleanupNetwork(ctx context.Context, c *Config) error {
	var done []string
	entries, _ := os.ReadDir("/run/netns")
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), NetnsPrefix) {
			if out, err := exec.CommandContext(ctx, "ip", "netns", "delete", e.Name()).CombinedOutput(); err != nil {
				return fmt.Errorf("ip netns delete %s: %v: %s", e.Name(), err, strings.TrimSpace(string(out)))
			}
			n++
		}
	}
	if n > 0 {
		done = append(done, fmt.Sprintf("%d network namespaces", n))
	}
	// ip netns add bind-mounts /run/netns on itself the first time: once
	// no namespace is left, that mount and the directory go too.
	if rest, err := os.ReadDir("/run/netns"); err == nil && len(rest) == 0 {
		_ = unix.Unmount("/run/netns", unix.MNT_DETACH)
		if os.Remove("/run/netns") == nil {
			done = append(done, "/run/netns")
		}
	}
	if exec.CommandContext(ctx, "ip", "link", "show", PodBridge).Run() == nil {
		if out, err := exec.CommandContext(ctx, "ip", "link", "delete", PodBridge).CombinedOutput(); err != nil {
			return fmt.Errorf("ip link delete %s: %v: %s", PodBridge, err, strings.TrimSpace(string(out)))
		}
		done = append(done, "the "+PodBridge+" bridge")
	}
	if out, _ := exec.CommandContext(ctx, "ip", "route", "show", "table", "all", "proto", RouteProto).Output(); len(strings.TrimSpace(string(out))) > 0 {
		if out, err := exec.CommandContext(ctx, "ip", "route", "flush", "table", "all", "proto", RouteProto).CombinedOutput(); err != nil {
			return fmt.Errorf("ip route flush proto %s: %v: %s", RouteProto, err, strings.TrimSpace(string(out)))
		}
		done = append(done, "the agent's routes (proto "+RouteProto+")")
	}
	for _, t := range NftTables {
		if exec.CommandContext(ctx, "nft", "list", "table", "ip", t).Run() == nil {
			if out, err := exec.CommandContext(ctx, "nft", "delete", "table", "ip", t).CombinedOutput(); err != nil {
				return fmt.Errorf("nft delete table ip %s: %v: %s", t, err, strings.TrimSpace(string(out)))
			}
			done = append(done, "nftables table ip "+t)
		}
	}
	say(c.Out, done, "nothing of Kobune's in the network")
	return nil
}

func say(out io.Writer, done []string, none string) {
	if len(done) == 0 {
		fmt.Fprintf(out, "\t%s\n", none)
		return
	}
	fmt.Fprintf(out, "\tremoved %s\n", strings.Join(done, ", "))
}

// cleanupCgroups removes the pods' cgroup trees, deepest first, in every
// hierarchy (cgroup v2: /sys/fs/cgroup/kobune; v1: under each
// controller). A cgroup with processes cannot go: those are named.
func cleanupCgroups(_ context.Context, c *Config) error {
	roots, _ := filepath.Glob("/sys/fs/cgroup/" + CgroupName)
	more, _ := filepath.Glob("/sys/fs/cgroup/*/" + CgroupName)
	roots = append(roots, more...)
	n := 0
	for _, root := range roots {
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		slices.Reverse(dirs) // children before parents
		for _, d := range dirs {
			if err := unix.Rmdir(d); err != nil && !errors.Is(err, fs.ErrNotExist) {
				procs, _ := os.ReadFile(filepath.Join(d, "cgroup.procs"))
				return fmt.Errorf("cgroup %s: %v (processes in it: %s)", d, err, strings.Join(strings.Fields(string(procs)), " "))
			}
			n++
		}
	}
	if n == 0 {
		fmt.Fprintln(c.Out, "\tno cgroup of Kobune's")
	} else {
		fmt.Fprintf(c.Out, "\tremoved %d cgroups\n", n)
	}
	return nil
}

// unmountAll unmounts every mount below VarDir, deepest first (detached:
// a mount still busy goes when its last user does). The mount table is
// read with moby/sys/mountinfo, which containerd's client brings along.
func unmountAll(_ context.Context, c *Config) error {
	mounts, err := mountinfo.GetMounts(mountinfo.PrefixFilter(VarDir))
	if err != nil {
		return err
	}
	var points []string
	for _, m := range mounts {
		points = append(points, m.Mountpoint)
	}
	slices.SortFunc(points, func(a, b string) int { return len(b) - len(a) })
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
			return fmt.Errorf("unmount %s: %w", p, err)
		}
	}
	if len(points) == 0 {
		fmt.Fprintf(c.Out, "\tnothing mounted under %s\n", VarDir)
	} else {
		fmt.Fprintf(c.Out, "\tremoved %d mounts\n", len(points))
	}
	return nil
}

func removeFiles(_ context.Context, c *Config) error {
	var done []string
	for _, p := range []string{EtcDir, VarDir} {
		if _, err := os.Stat(p); err == nil {
			if err := os.RemoveAll(p); err != nil {
				return err
			}
			done = append(done, p)
		}
	}
	n := 0
	for _, b := range Binaries {
		if err := os.Remove(filepath.Join(BinDir, b)); err == nil {
			n++
		}
	}
	if n > 0 {
		done = append(done, fmt.Sprintf("%d binaries from %s", n, BinDir))
	}
	say(c.Out, done, "no file of Kobune's")
	return nil
}
