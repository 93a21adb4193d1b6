package podio

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// kobectl cp copies files between this machine and a container as kubectl
// does: a tar stream through exec (the container needs tar). Paths in an
// archive that would land outside the destination are refused.

// cpSpec is a [[NAMESPACE/]POD:]PATH argument.
type cpSpec struct {
	namespace, pod, path string
}

func parseCpSpec(arg string) cpSpec {
	if i := strings.Index(arg, ":"); i > 0 && !strings.Contains(arg[:i], string(filepath.Separator)+string(filepath.Separator)) {
		ref, p := arg[:i], arg[i+1:]
		if ns, pod, ok := strings.Cut(ref, "/"); ok {
			return cpSpec{namespace: ns, pod: pod, path: p}
		}
		return cpSpec{pod: ref, path: p}
	}
	return cpSpec{path: arg}
}

func NewCmdCp(o *cmdutil.Options) *cobra.Command {
	var container string
	cmd := &cobra.Command{
		Use:   "cp SRC DEST  (one of them [NAMESPACE/]POD:PATH)",
		Short: "Copy files and directories to and from containers (kubectl cp)",
		Long: `Copy a file or directory between this machine and a container, as a
tar stream through exec: the container needs a tar program.`,
		Example: `  # A local file into pod web-0
  kobectl cp ./index.html web-0:/tmp/index.html

  # A directory out of a pod of namespace demo
  kobectl cp demo/web-0:/var/log ./web-logs

  # Into one container of a pod
  kobectl cp ./conf web-0:/etc/app -c app`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			src, dst := parseCpSpec(args[0]), parseCpSpec(args[1])
			if (src.pod == "") == (dst.pod == "") {
				return fmt.Errorf("one of SRC and DEST must be a pod path ([NAMESPACE/]POD:PATH), the other a local path")
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			remote := src
			if dst.pod != "" {
				remote = dst
			}
			ns := remote.namespace
			if ns == "" {
				ns = o.NamespaceOrDefault()
			}
			if remote.path == "" {
				return fmt.Errorf("%s: name a path in the container after the colon", remote.pod)
			}
			if dst.pod != "" {
				return copyToPod(cmd, o, c, ns, dst.pod, container, src.path, dst.path)
			}
			return copyFromPod(cmd, o, c, ns, src.pod, container, src.path, dst.path)
		},
	}
	cmd.Flags().StringVarP(&container, "container", "c", "", "container (default: the pod's only one)")
	return cmd
}

// copyToPod tars the local path and untars it in the container: a file
// becomes DEST, a directory's content goes under DEST.
func copyToPod(cmd *cobra.Command, o *cmdutil.Options, c *client.Client, ns, pod, container, local, dest string) error {
	st, err := os.Stat(local)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	base := path.Base(dest)
	if err := addToTar(tw, local, base, st); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	var stderr bytes.Buffer
	code, err := c.Exec(cmd.Context(), ns, pod, client.ExecOptions{Container: container,
		Command: []string{"tar", "-xmf", "-", "-C", path.Dir(dest)}, Stdin: &buf, Stdout: io.Discard, Stderr: &stderr})
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("tar in the container exited %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func addToTar(tw *tar.Writer, local, name string, st os.FileInfo) error {
	if st.IsDir() {
		if err := tw.WriteHeader(&tar.Header{Name: name + "/", Mode: int64(st.Mode().Perm()), Typeflag: tar.TypeDir, ModTime: st.ModTime()}); err != nil {
			return err
		}
		entries, err := os.ReadDir(local)
		if err != nil {
			return err
		}
		for _, e := range entries {
			info, err := e.Info()
			if err != nil {
				return err
			}
			if err := addToTar(tw, filepath.Join(local, e.Name()), name+"/"+e.Name(), info); err != nil {
				return err
			}
		}
		return nil
	}
	if !st.Mode().IsRegular() {
		return nil // links and devices are not copied
	}
	f, err := os.Open(local)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := tw.WriteHeader(&tar.Header{Name: name, Mode: int64(st.Mode().Perm()), Size: st.Size(), Typeflag: tar.TypeReg, ModTime: st.ModTime()}); err != nil {
		return err
	}
	_, err = io.Copy(tw, f)
	return err
}

// copyFromPod tars the path in the container and unpacks it locally as
// DEST.
func copyFromPod(cmd *cobra.Command, o *cmdutil.Options, c *client.Client, ns, pod, container, remote, local string) error {
	pr, pw := io.Pipe()
	var stderr bytes.Buffer
	done := make(chan error, 1)
	go func() {
		code, err := c.Exec(cmd.Context(), ns, pod, client.ExecOptions{Container: container,
			Command: []string{"tar", "cf", "-", "-C", path.Dir(remote), path.Base(remote)}, Stdout: pw, Stderr: &stderr})
		if err == nil && code != 0 {
			err = fmt.Errorf("tar in the container exited %d: %s", code, strings.TrimSpace(stderr.String()))
		}
		pw.CloseWithError(err)
		done <- err
	}()
	extractErr := extractTar(pr, path.Base(remote), local)
	_, _ = io.Copy(io.Discard, pr)
	if err := <-done; err != nil {
		return err
	}
	return extractErr
}

// extractTar writes the archive's entries under local, the archive's top
// entry (named top) becoming local itself; an entry that would leave local
// (.. or an absolute path) is an error.
func extractTar(r io.Reader, top, local string) error {
	tr := tar.NewReader(r)
	found := false
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		rel, ok := strings.CutPrefix(strings.TrimPrefix(h.Name, "./"), top)
		if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
			continue
		}
		for _, part := range strings.Split(rel, "/") {
			if part == ".." {
				return fmt.Errorf("refusing %q: it would be written outside %s", h.Name, local)
			}
		}
		target := filepath.Join(local, filepath.FromSlash(rel))
		found = true
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			// links and devices from a container are not recreated here
		}
	}
	if !found {
		return fmt.Errorf("%s: nothing copied", top)
	}
	return nil
}
