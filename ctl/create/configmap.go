package create

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/ctl/cmdutil"
)

// keyValues reads --from-literal KEY=VALUE, --from-file [KEY=]PATH (a
// directory: each regular file) and --from-env-file PATH into data.
func keyValues(literals, files, envFiles []string) (map[string]string, error) {
	data := map[string]string{}
	put := func(k, v, from string) error {
		if _, dup := data[k]; dup {
			return fmt.Errorf("key %q is given twice (%s)", k, from)
		}
		data[k] = v
		return nil
	}
	for _, l := range literals {
		k, v, ok := strings.Cut(l, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--from-literal %q: want KEY=VALUE", l)
		}
		if err := put(k, v, "--from-literal"); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		key, p, ok := strings.Cut(f, "=")
		if !ok {
			key, p = "", f
		}
		st, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("--from-file: %w", err)
		}
		paths := []string{p}
		if st.IsDir() {
			if key != "" {
				return nil, fmt.Errorf("--from-file %q: a key names one file, not a directory", f)
			}
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			paths = paths[:0]
			for _, e := range entries {
				if e.Type().IsRegular() {
					paths = append(paths, filepath.Join(p, e.Name()))
				}
			}
		}
		for _, fp := range paths {
			b, err := os.ReadFile(fp)
			if err != nil {
				return nil, fmt.Errorf("--from-file: %w", err)
			}
			k := key
			if k == "" {
				k = filepath.Base(fp)
			}
			if err := put(k, string(b), fp); err != nil {
				return nil, err
			}
		}
	}
	for _, f := range envFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("--from-env-file: %w", err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			k, v, ok := strings.Cut(line, "=")
			if !ok {
				return nil, fmt.Errorf("%s line %d: want KEY=VALUE", f, i+1)
			}
			if err := put(k, v, f); err != nil {
				return nil, err
			}
		}
	}
	return data, nil
}

func newCreateConfigMapCommand(o *cmdutil.Options) *cobra.Command {
	var g genFlags
	var literals, files, envFiles []string
	cmd := &cobra.Command{
		Use:     "configmap NAME [--from-literal=KEY=VALUE] [--from-file=[KEY=]PATH] [--from-env-file=PATH]",
		Aliases: []string{"cm"},
		Short:   "Create a ConfigMap from literals and files (kubectl create configmap)",
		Example: `  # Two keys given on the command line
  kobectl create configmap settings --from-literal=color=blue --from-literal=size=3

  # A key per file of a directory, and one file under another key
  kobectl create configmap web-config --from-file=conf/ --from-file=index=site/index.html`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := keyValues(literals, files, envFiles)
			if err != nil {
				return err
			}
			cm := &core.ConfigMap{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: meta.ObjectMeta{Name: args[0]}, Data: data}
			return emitFor(o, cmd, cm, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringArrayVar(&literals, "from-literal", nil, "a key and its value, KEY=VALUE (repeatable)")
	cmd.Flags().StringArrayVar(&files, "from-file", nil, "a file (its name the key, or KEY=PATH) or a directory (a key per file) (repeatable)")
	cmd.Flags().StringArrayVar(&envFiles, "from-env-file", nil, "a file of KEY=VALUE lines (repeatable)")
	return cmd
}
