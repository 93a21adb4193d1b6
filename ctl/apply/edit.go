package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// kobectl diff and edit: both show objects as YAML files and hand them to
// a program the user chooses (a diff tool, an editor).

func NewCmdDiff(o *cmdutil.Options) *cobra.Command {
	var f writeFlags
	cmd := &cobra.Command{
		Use:   "diff -f FILE",
		Short: "Show what apply would change, against the live objects (kubectl diff)",
		Long: `Show, as a unified diff, how each object would change if the manifests
were applied: the API server computes the result (a server dry run:
admission, defaulting and validation included) and nothing is stored.
The diff program is $KUBECTL_EXTERNAL_DIFF, else "diff -u -N". Exit
status: 0 no differences, 1 differences, above 1 an error.`,
		Example: `  # What would applying web.yaml change?
  kobectl diff -f web.yaml

  # With another diff program
  KUBECTL_EXTERNAL_DIFF="diff -u --color=always" kobectl diff -f deploy/examples/`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := os.MkdirTemp("", "kobectl-diff-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(dir)
			liveDir, mergedDir := filepath.Join(dir, "LIVE"), filepath.Join(dir, "MERGED")
			for _, d := range []string{liveDir, mergedDir} {
				if err := os.Mkdir(d, 0o700); err != nil {
					return err
				}
			}
			f.dryRun, f.quiet = "server", true
			err = forEachManifest(o, cmd, &f, func(ctx context.Context, c *client.Client, m cmdutil.Manifest) (string, error) {
				verb, err := applyOne(ctx, c, m, &f)
				if err != nil {
					return verb, err
				}
				md := m.Object.GetObjectMeta()
				name := strings.Join([]string{strings.ReplaceAll(m.Kind.APIVersion, "/", "."), m.Kind.Kind, md.Namespace, md.Name}, ".")
				for _, side := range []struct {
					dir string
					obj []byte
				}{{liveDir, f.live}, {mergedDir, f.written}} {
					if side.obj == nil {
						continue
					}
					y, err := diffYAML(side.obj)
					if err != nil {
						return verb, err
					}
					if err := os.WriteFile(filepath.Join(side.dir, name), y, 0o600); err != nil {
						return verb, err
					}
				}
				return verb, nil
			})
			if err != nil {
				return cmdutil.ExitError{Code: 2, Err: err}
			}
			return runDiff(cmd, o, liveDir, mergedDir)
		},
	}
	cmd.Flags().StringSliceVarP(&f.files, "filename", "f", nil, "file, directory or - (stdin) with manifests")
	cmd.Flags().StringVar(&f.validate, "validate", "strict", `fields Kubernetes does not have (typos): "strict" refuses the document, "warn" warns, "ignore" says nothing`)
	cmd.Flags().BoolVar(&f.strict, "strict", false, "treat Kubernetes fields kobune does not support as errors")
	return cmd
}

// diffYAML is an object as diff shows it: YAML without managedFields.
func diffYAML(b []byte) ([]byte, error) {
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		return nil, err
	}
	if md, ok := obj["metadata"].(map[string]any); ok {
		delete(md, "managedFields")
	}
	return yaml.Marshal(obj)
}

// runDiff runs the diff program over the two directories; its exit status
// 1 (differences) becomes kobectl's.
func runDiff(cmd *cobra.Command, o *cmdutil.Options, live, merged string) error {
	prog := strings.Fields(os.Getenv("KUBECTL_EXTERNAL_DIFF"))
	if len(prog) == 0 {
		prog = []string{"diff", "-u", "-N"}
	}
	c := exec.CommandContext(cmd.Context(), prog[0], append(prog[1:], live, merged)...)
	c.Stdout, c.Stderr = o.Out, o.ErrOut
	err := c.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ee) && ee.ExitCode() == 1:
		return cmdutil.ExitError{Code: 1, Quiet: true}
	case errors.As(err, &ee):
		return cmdutil.ExitError{Code: ee.ExitCode(), Err: fmt.Errorf("%s failed", prog[0])}
	}
	return cmdutil.ExitError{Code: 2, Err: fmt.Errorf("running %s: %w (set KUBECTL_EXTERNAL_DIFF to another program)", prog[0], err)}
}

func NewCmdEdit(o *cmdutil.Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "edit (TYPE NAME | TYPE/NAME)",
		Short: "Edit an object in your editor and store the result (kubectl edit)",
		Long: `Open the live object as YAML in $KUBE_EDITOR, else $EDITOR, else vi;
when the editor exits, the changed object is stored (an update that names
the resourceVersion it was read at, so a change someone made meanwhile is
a conflict, not lost). An unchanged or empty file cancels the edit. When
the server refuses the change, the edited file is kept and its path
printed.`,
		Example: `  # Edit Deployment web
  kobectl edit deployment/web

  # With another editor
  KUBE_EDITOR=nano kobectl edit svc web -n demo`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			k, names, err := o.ParseTarget(args)
			if err != nil {
				return err
			}
			if len(names) != 1 {
				return fmt.Errorf("name one object to edit")
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			return editObjects(o, ctx, cmd, c, k, o.NamespaceFor(k, false), names[0])
		},
	}
	return cmd
}

func editObjects(o *cmdutil.Options, ctx context.Context, cmd *cobra.Command, c *client.Client, k *scheme.Kind, ns, name string) error {
	live, err := c.Resource(k).Get(ctx, ns, name)
	if err != nil {
		return err
	}
	y, err := diffYAML(live)
	if err != nil {
		return err
	}
	header := ("# Please edit the object below. Lines beginning with a '#' will be ignored,\n# and an empty file will abort the edit. If an error occurs while saving this file will be\n# reopened with the relevant failures.\n#\n")
	f, err := os.CreateTemp("", "kobectl-edit-*.yaml")
	if err != nil {
		return err
	}
	path := f.Name()
	original := append([]byte(header), y...)
	if _, err := f.Write(original); err != nil {
		f.Close()
		return err
	}
	f.Close()
	keep := false
	defer func() {
		if !keep {
			os.Remove(path)
		}
	}()
	editor := os.Getenv("KUBE_EDITOR")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	ed := exec.CommandContext(ctx, "sh", "-c", editor+` "$1"`, "editor", path)
	ed.Stdin, ed.Stdout, ed.Stderr = os.Stdin, o.Out, o.ErrOut
	if err := ed.Run(); err != nil {
		return fmt.Errorf("editor %q: %w (set KUBE_EDITOR or EDITOR)", editor, err)
	}
	edited, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	body := stripComments(edited)
	if len(bytes.TrimSpace(body)) == 0 {
		fmt.Fprintln(o.ErrOut, "Edit cancelled, saved file was empty.")
		return nil
	}
	if bytes.Equal(stripComments(original), body) {
		fmt.Fprintln(o.ErrOut, "Edit cancelled, no changes made.")
		return nil
	}
	js, err := yaml.YAMLToJSON(body)
	if err != nil {
		keep = true
		return fmt.Errorf("the edited file is not valid YAML: %v (your changes are in %s)", err, path)
	}
	w, err := c.Resource(k).Update(ctx, ns, js, client.WriteOptions{FieldValidation: "Strict"})
	if err != nil {
		keep = true
		return fmt.Errorf("%s: %w\nA copy of your changes has been stored to %q", cmdutil.Ref(k, name), err, path)
	}
	for _, warning := range w.Warnings {
		fmt.Fprintf(o.ErrOut, "Warning: %s\n", warning)
	}
	fmt.Fprintf(o.Out, "%s edited\n", cmdutil.Ref(k, name))
	return nil
}

func stripComments(b []byte) []byte {
	var out [][]byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line)
		}
	}
	return bytes.Join(out, []byte("\n"))
}
