package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kobune/kobune/api/apps"
	"github.com/kobune/kobune/api/batch"
	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/policy"
	"github.com/kobune/kobune/api/resource"
	"github.com/kobune/kobune/api/scheduling"
	"github.com/kobune/kobune/api/scheme"
	"github.com/kobune/kobune/api/selector"
	"github.com/kobune/kobune/client"
	"github.com/kobune/kobune/ctl/cmdutil"
	"github.com/kobune/kobune/ctl/get"
)

// Generators: commands that build one object from flags — create
// deployment|configmap|secret|service|job|quota|pdb|priorityclass, run,
// expose — and then create it, or with --dry-run=client only print it (the
// usual way to start a manifest: kobectl create deployment web --image=...
// --dry-run=client -o yaml), or with --dry-run=server have the API server
// check it.

// genFlags are the flags every generator has.
type genFlags struct {
	dryRun cmdutil.DryRunMode
	output string
}

func (g *genFlags) register(cmd *cobra.Command) {
	cmdutil.AddDryRun(cmd, &g.dryRun)
	cmd.Flags().StringVarP(&g.output, "output", "o", "", "print the object as yaml or json, or its name (-o name)")
}

// emit creates obj (or only prints it, for --dry-run=client) and prints
// the result as -o asks, else "kind/name created".
func emit(o *Options, ctx context.Context, obj meta.Object, g *genFlags) error {
	k, err := scheme.Lookup(strings.ToLower(obj.GetTypeMeta().Kind))
	if err != nil {
		return err
	}
	switch g.output {
	case "", "yaml", "json", "name":
	default:
		return fmt.Errorf("-o %q: use yaml, json or name", g.output)
	}
	m := obj.GetObjectMeta()
	if k.Namespaced && m.Namespace == "" {
		m.Namespace = o.NamespaceOrDefault()
	}
	out := obj
	if g.dryRun != "client" {
		c, err := o.Client()
		if err != nil {
			return err
		}
		raw, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		w, err := c.Resource(k).Create(ctx, m.Namespace, raw, client.WriteOptions{DryRun: g.dryRun == "server"})
		if err != nil {
			return err
		}
		for _, warning := range w.Warnings {
			fmt.Fprintf(o.ErrOut, "Warning: %s\n", warning)
		}
		if out, err = k.Decode(w.Object); err != nil {
			return err
		}
	}
	switch g.output {
	case "yaml", "json":
		return get.Print(o.Out, k, g.output, []meta.Object{out}, true)
	case "name":
		fmt.Fprintln(o.Out, cmdutil.Ref(k, m.Name))
		return nil
	}
	suffix := map[cmdutil.DryRunMode]string{"client": " (dry run)", "server": " (server dry run)"}[g.dryRun]
	fmt.Fprintf(o.Out, "%s created%s\n", cmdutil.Ref(k, m.Name), suffix)
	return nil
}

// emitFor is emit under the command's context (its timeout).
func emitFor(o *Options, cmd *cobra.Command, obj meta.Object, g *genFlags) error {
	ctx, cancel := cmdutil.CtxFor(cmd)
	defer cancel()
	return emit(o, ctx, obj, g)
}

// containerName is what kubectl names a container after its image:
// registry.example/team/web:1.0 gives web.
func containerName(image string) string {
	base := path.Base(image)
	if i := strings.IndexAny(base, ":@"); i > 0 {
		base = base[:i]
	}
	return base
}

func newCreateDeploymentCommand(o *Options) *cobra.Command {
	var g genFlags
	var images []string
	var replicas, port int32
	cmd := &cobra.Command{
		Use:     "deployment NAME --image=IMAGE [--replicas=N] [--port=PORT] [-- COMMAND [ARG...]]",
		Aliases: []string{"deploy"},
		Short:   "Create a Deployment (kubectl create deployment)",
		Example: `  # Two replicas of labapp, pods labelled app=web
  kobectl create deployment web --image=kobune.local/labapp:1.0 --replicas=2 --port=8080

  # Only write the manifest, to edit and apply later
  kobectl create deployment web --image=kobune.local/labapp:1.0 --dry-run=client -o yaml > web.yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(images) == 0 {
				return fmt.Errorf("--image is required")
			}
			name := args[0]
			var containers []core.Container
			for _, img := range images {
				c := core.Container{Name: containerName(img), Image: img}
				if port > 0 {
					c.Ports = []core.ContainerPort{{ContainerPort: port}}
				}
				containers = append(containers, c)
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 && len(args) > dash {
				containers[0].Command = args[dash:]
			}
			labels := map[string]string{"app": name}
			d := &apps.Deployment{TypeMeta: meta.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
				ObjectMeta: meta.ObjectMeta{Name: name, Labels: labels},
				Spec: apps.DeploymentSpec{Replicas: &replicas, Selector: &meta.LabelSelector{MatchLabels: labels},
					Template: core.PodTemplateSpec{ObjectMeta: meta.ObjectMeta{Labels: labels}, Spec: core.PodSpec{Containers: containers}}}}
			return emitFor(o, cmd, d, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringSliceVar(&images, "image", nil, "the image of each container (repeatable: one container per image)")
	cmd.Flags().Int32Var(&replicas, "replicas", 1, "how many pods")
	cmd.Flags().Int32Var(&port, "port", 0, "the port the container serves")
	return cmd
}

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

func newCreateConfigMapCommand(o *Options) *cobra.Command {
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

func newCreateSecretCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "secret (generic | tls) NAME ...",
		Short: "Create a Secret (kubectl create secret)",
		Example: `  # A password from the command line
  kobectl create secret generic db-pass --from-literal=password=s3cret

  # A certificate and its key, for TLS
  kobectl create secret tls web-tls --cert=tls.crt --key=tls.key`,
	}
	var g genFlags
	var literals, files, envFiles []string
	var typ string
	generic := &cobra.Command{
		Use:     "generic NAME [--from-literal=KEY=VALUE] [--from-file=[KEY=]PATH] [--from-env-file=PATH] [--type=TYPE]",
		Short:   "Create a Secret from literals and files (kubectl create secret generic)",
		Example: "  kobectl create secret generic db-pass --from-literal=user=app --from-literal=password=s3cret",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := keyValues(literals, files, envFiles)
			if err != nil {
				return err
			}
			return emitSecret(o, cmd, args[0], typ, data, &g)
		},
	}
	g.register(generic)
	generic.Flags().StringArrayVar(&literals, "from-literal", nil, "a key and its value, KEY=VALUE (repeatable)")
	generic.Flags().StringArrayVar(&files, "from-file", nil, "a file (its name the key, or KEY=PATH) or a directory (repeatable)")
	generic.Flags().StringArrayVar(&envFiles, "from-env-file", nil, "a file of KEY=VALUE lines (repeatable)")
	generic.Flags().StringVar(&typ, "type", "Opaque", "the Secret's type")
	var tg genFlags
	var cert, key string
	tls := &cobra.Command{
		Use:     "tls NAME --cert=PATH --key=PATH",
		Short:   "Create a kubernetes.io/tls Secret from a certificate and its key (kubectl create secret tls)",
		Example: "  kobectl create secret tls web-tls --cert=tls.crt --key=tls.key",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if cert == "" || key == "" {
				return fmt.Errorf("--cert and --key are both required")
			}
			data, err := keyValues(nil, []string{"tls.crt=" + cert, "tls.key=" + key}, nil)
			if err != nil {
				return err
			}
			return emitSecret(o, cmd, args[0], "kubernetes.io/tls", data, &tg)
		},
	}
	tg.register(tls)
	tls.Flags().StringVar(&cert, "cert", "", "the PEM certificate (chain) file")
	tls.Flags().StringVar(&key, "key", "", "the PEM private key file")
	cmd.AddCommand(generic, tls)
	return cmd
}

func emitSecret(o *Options, cmd *cobra.Command, name, typ string, data map[string]string, g *genFlags) error {
	s := &core.Secret{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta.ObjectMeta{Name: name}, Type: typ, Data: map[string][]byte{}}
	for k, v := range data {
		s.Data[k] = []byte(v)
	}
	return emitFor(o, cmd, s, g)
}

// parsePortPairs reads --tcp PORT[:TARGET] values.
func parsePortPairs(pairs []string) ([]core.ServicePort, error) {
	var ports []core.ServicePort
	for _, p := range pairs {
		port, target, hasTarget := strings.Cut(p, ":")
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("--tcp %q: want PORT or PORT:TARGET_PORT, ports between 1 and 65535", p)
		}
		sp := core.ServicePort{Name: fmt.Sprintf("%d-%s", n, target), Protocol: core.ProtocolTCP, Port: int32(n), TargetPort: meta.FromInt(int32(n))}
		if !hasTarget {
			sp.Name = fmt.Sprintf("%d-%d", n, n)
		} else if t, err := strconv.Atoi(target); err == nil {
			sp.TargetPort = meta.FromInt(int32(t))
		} else {
			sp.TargetPort = meta.FromString(target)
		}
		ports = append(ports, sp)
	}
	return ports, nil
}

func newCreateServiceCommand(o *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "service (clusterip | nodeport | externalname) NAME ...",
		Aliases: []string{"svc"},
		Short:   "Create a Service (kubectl create service)",
		Example: `  # Port 80 to port 8080 of the pods labelled app=web
  kobectl create service clusterip web --tcp=80:8080

  # The same on every node's port 30080
  kobectl create service nodeport web --tcp=80:8080 --node-port=30080`,
	}
	for _, typ := range []string{"ClusterIP", "NodePort", "ExternalName"} {
		var g genFlags
		var tcp []string
		var nodePort int32
		var clusterIP, externalName string
		sub := &cobra.Command{
			Use:     strings.ToLower(typ) + " NAME",
			Short:   "Create a " + typ + " Service; its selector is app=NAME (kubectl create service " + strings.ToLower(typ) + ")",
			Example: "  kobectl create service " + strings.ToLower(typ) + " web " + map[string]string{"ClusterIP": "--tcp=80:8080", "NodePort": "--tcp=80:8080 --node-port=30080", "ExternalName": "--external-name=db.example.com"}[typ],
			Args:    cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				ports, err := parsePortPairs(tcp)
				if err != nil {
					return err
				}
				name := args[0]
				svc := &core.Service{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Service"},
					ObjectMeta: meta.ObjectMeta{Name: name, Labels: map[string]string{"app": name}},
					Spec:       core.ServiceSpec{Type: typ, Ports: ports, ClusterIP: clusterIP}}
				switch typ {
				case "ExternalName":
					if externalName == "" {
						return fmt.Errorf("--external-name is required")
					}
					svc.Spec.ExternalName = externalName
				default:
					if len(ports) == 0 && clusterIP != "None" {
						return fmt.Errorf("--tcp is required: at least one PORT[:TARGET_PORT]")
					}
					svc.Spec.Selector = map[string]string{"app": name}
				}
				if nodePort != 0 && len(svc.Spec.Ports) > 0 {
					svc.Spec.Ports[0].NodePort = nodePort
				}
				return emitFor(o, cmd, svc, &g)
			},
		}
		g.register(sub)
		if typ != "ExternalName" {
			sub.Flags().StringArrayVar(&tcp, "tcp", nil, "PORT[:TARGET_PORT] (repeatable)")
		}
		switch typ {
		case "ClusterIP":
			sub.Flags().StringVar(&clusterIP, "clusterip", "", `the cluster IP to ask for ("None": a headless Service)`)
		case "NodePort":
			sub.Flags().Int32Var(&nodePort, "node-port", 0, "the node port of the first port (default: one chosen from 30000-32767)")
		case "ExternalName":
			sub.Flags().StringVar(&externalName, "external-name", "", "the DNS name the Service stands for")
		}
		cmd.AddCommand(sub)
	}
	return cmd
}

func newCreateJobCommand(o *Options) *cobra.Command {
	var g genFlags
	var image, from string
	cmd := &cobra.Command{
		Use:   "job NAME (--image=IMAGE [-- COMMAND [ARG...]] | --from=cronjob/NAME)",
		Short: "Create a Job, from an image or from a CronJob's template (kubectl create job)",
		Example: `  # A Job of one pod running a command
  kobectl create job hello --image=kobune.local/busybox:1.35 -- echo hello

  # Run a CronJob now
  kobectl create job backup-now --from=cronjob/backup`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			name := args[0]
			job := &batch.Job{TypeMeta: meta.TypeMeta{APIVersion: "batch/v1", Kind: "Job"}, ObjectMeta: meta.ObjectMeta{Name: name}}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			switch {
			case (image == "") == (from == ""):
				return fmt.Errorf("give --image or --from=cronjob/NAME, one of them")
			case from != "":
				kind, cjName, ok := strings.Cut(from, "/")
				if !ok || (kind != "cronjob" && kind != "cronjobs" && kind != "cj") {
					return fmt.Errorf("--from %q: want cronjob/NAME", from)
				}
				c, err := o.Client()
				if err != nil {
					return err
				}
				cj, err := client.For[*batch.CronJob](c).Get(ctx, o.NamespaceOrDefault(), cjName)
				if err != nil {
					return err
				}
				job.Spec = cj.Spec.JobTemplate.Spec
				job.Labels = cj.Spec.JobTemplate.Labels
				job.Annotations = map[string]string{"cronjob.kubernetes.io/instantiate": "manual"}
				ctrl := true
				job.OwnerReferences = []meta.OwnerReference{{APIVersion: "batch/v1", Kind: "CronJob", Name: cj.Name, UID: cj.UID, Controller: &ctrl}}
			default:
				ctr := core.Container{Name: name, Image: image}
				if dash := cmd.ArgsLenAtDash(); dash >= 0 && len(args) > dash {
					ctr.Command = args[dash:]
				}
				job.Spec.Template.Spec = core.PodSpec{Containers: []core.Container{ctr}, RestartPolicy: core.RestartPolicyNever}
			}
			return emit(o, ctx, job, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&image, "image", "", "the image of the Job's container")
	cmd.Flags().StringVar(&from, "from", "", "cronjob/NAME: a Job from that CronJob's template")
	return cmd
}

func newRunCommand(o *Options) *cobra.Command {
	var g genFlags
	var image, restart, pullPolicy string
	var port int32
	var labels, env []string
	var command bool
	cmd := &cobra.Command{
		Use:   "run NAME --image=IMAGE [--image-pull-policy=POLICY] [--port=PORT] [--env=K=V] [--labels=K=V,...] [--restart=Always|OnFailure|Never] [--command] [-- ARG...]",
		Short: "Run a pod of one container (kubectl run)",
		Long: `Create a pod of one container named NAME, labelled run=NAME (or
--labels). Arguments after -- are the container's args, or, with
--command, its command.`,
		Example: `  # A pod of labapp
  kobectl run web --image=kobune.local/labapp:1.0 --port=8080

  # A pod that runs a command once
  kobectl run once --image=kobune.local/busybox:1.35 --restart=Never --command -- sh -c 'date; sleep 5'

  # Only the manifest
  kobectl run web --image=kobune.local/labapp:1.0 --dry-run=client -o yaml`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if image == "" {
				return fmt.Errorf("--image is required")
			}
			name := args[0]
			lbl := map[string]string{"run": name}
			if len(labels) > 0 {
				lbl = map[string]string{}
				for _, l := range labels {
					k, v, ok := strings.Cut(l, "=")
					if !ok {
						return fmt.Errorf("--labels %q: want KEY=VALUE", l)
					}
					lbl[k] = v
				}
			}
			ctr := core.Container{Name: name, Image: image}
			switch core.PullPolicy(pullPolicy) {
			case "", core.PullAlways, core.PullIfNotPresent, core.PullNever:
				ctr.ImagePullPolicy = core.PullPolicy(pullPolicy)
			default:
				return fmt.Errorf("--image-pull-policy %q: use Always, IfNotPresent or Never", pullPolicy)
			}
			if port > 0 {
				ctr.Ports = []core.ContainerPort{{ContainerPort: port}}
			}
			for _, e := range env {
				k, v, ok := strings.Cut(e, "=")
				if !ok {
					return fmt.Errorf("--env %q: want KEY=VALUE", e)
				}
				ctr.Env = append(ctr.Env, core.EnvVar{Name: k, Value: v})
			}
			if dash := cmd.ArgsLenAtDash(); dash >= 0 && len(args) > dash {
				if command {
					ctr.Command = args[dash:]
				} else {
					ctr.Args = args[dash:]
				}
			} else if command {
				return fmt.Errorf("--command needs the command after --")
			}
			switch restart {
			case "Always", "OnFailure", "Never":
			default:
				return fmt.Errorf("--restart %q: use Always, OnFailure or Never", restart)
			}
			pod := &core.Pod{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Pod"}, ObjectMeta: meta.ObjectMeta{Name: name, Labels: lbl},
				Spec: core.PodSpec{Containers: []core.Container{ctr}, RestartPolicy: core.RestartPolicy(restart)}}
			return emitFor(o, cmd, pod, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&image, "image", "", "the container's image")
	cmd.Flags().StringVar(&pullPolicy, "image-pull-policy", "", "the container's imagePullPolicy: Always, IfNotPresent or Never (empty: the server's default)")
	cmd.Flags().Int32Var(&port, "port", 0, "the port the container serves")
	cmd.Flags().StringSliceVarP(&labels, "labels", "l", nil, "the pod's labels KEY=VALUE,... (default run=NAME)")
	cmd.Flags().StringArrayVar(&env, "env", nil, "an environment variable KEY=VALUE (repeatable)")
	cmd.Flags().StringVar(&restart, "restart", "Always", "the pod's restartPolicy: Always, OnFailure or Never")
	cmd.Flags().BoolVar(&command, "command", false, "the words after -- are the command, not args")
	return cmd
}

func newExposeCommand(o *Options) *cobra.Command {
	var g genFlags
	var name, typ, protocol, targetPort string
	var port, nodePort int32
	cmd := &cobra.Command{
		Use:   "expose (TYPE/NAME | TYPE NAME) [--port=PORT] [--target-port=PORT] [--name=NAME] [--type=TYPE]",
		Short: "Make a Service for the pods of a pod, Deployment, ReplicaSet, StatefulSet or Service (kubectl expose)",
		Long: `Create a Service that selects what TYPE/NAME selects (a pod's labels, a
workload's selector, a Service's selector). Without --port, the first
container port of the pods is used.`,
		Example: `  # Port 80 of Service web to port 8080 of Deployment web's pods
  kobectl expose deployment web --port=80 --target-port=8080

  # On every node's port, for pod hello-1
  kobectl expose pod/hello-1 --port=8080 --type=NodePort --name=hello`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			target := args[0]
			if len(args) == 2 {
				target = args[0] + "/" + args[1]
			}
			c, err := o.Client()
			if err != nil {
				return err
			}
			ctx, cancel := cmdutil.CtxFor(cmd)
			defer cancel()
			svc, err := exposeService(ctx, c, o.NamespaceOrDefault(), target)
			if err != nil {
				return err
			}
			if name != "" {
				svc.Name = name
			}
			svc.Spec.Type = typ
			if port != 0 {
				svc.Spec.Ports = []core.ServicePort{{Port: port, TargetPort: meta.FromInt(port)}}
			}
			if len(svc.Spec.Ports) == 0 {
				return fmt.Errorf("couldn't find port via --port flag or introspection: give --port")
			}
			for i := range svc.Spec.Ports {
				sp := &svc.Spec.Ports[i]
				sp.Protocol = core.Protocol(protocol)
				if targetPort != "" {
					if n, err := strconv.Atoi(targetPort); err == nil {
						sp.TargetPort = meta.FromInt(int32(n))
					} else {
						sp.TargetPort = meta.FromString(targetPort)
					}
				}
				if len(svc.Spec.Ports) > 1 {
					sp.Name = fmt.Sprintf("port-%d", i+1)
				}
			}
			if nodePort != 0 {
				svc.Spec.Ports[0].NodePort = nodePort
			}
			return emit(o, ctx, svc, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&name, "name", "", "the Service's name (default: the exposed object's)")
	cmd.Flags().StringVar(&typ, "type", "ClusterIP", "ClusterIP or NodePort")
	cmd.Flags().Int32Var(&port, "port", 0, "the Service's port (default: the pods' first container port)")
	cmd.Flags().StringVar(&targetPort, "target-port", "", "the pods' port, a number or a name (default: --port)")
	cmd.Flags().Int32Var(&nodePort, "node-port", 0, "with --type=NodePort, the node port")
	cmd.Flags().StringVar(&protocol, "protocol", "TCP", "TCP, UDP or SCTP")
	return cmd
}

// exposeService builds the Service kubectl expose would for target: its
// selector, and the container ports of its pod template.
func exposeService(ctx context.Context, c *client.Client, ns, target string) (*core.Service, error) {
	kind, name, ok := strings.Cut(target, "/")
	if !ok {
		return nil, fmt.Errorf("%q: name TYPE/NAME or TYPE NAME, as in deployment/web", target)
	}
	var sel map[string]string
	var spec core.PodSpec
	var ports []core.ServicePort
	var err error
	fromSelector := func(ls *meta.LabelSelector) error {
		if ls == nil || len(ls.MatchExpressions) > 0 {
			return fmt.Errorf("%s has a selector a Service cannot express (matchExpressions): write the Service yourself", target)
		}
		sel = ls.MatchLabels
		return nil
	}
	switch kind {
	case "pod", "pods", "po":
		var p *core.Pod
		if p, err = client.For[*core.Pod](c).Get(ctx, ns, name); err == nil {
			if sel, spec = p.Labels, p.Spec; len(sel) == 0 {
				err = fmt.Errorf("pod %s has no labels: a Service selects pods by label", name)
			}
		}
	case "deployment", "deployments", "deploy":
		var d *apps.Deployment
		if d, err = client.For[*apps.Deployment](c).Get(ctx, ns, name); err == nil {
			spec, err = d.Spec.Template.Spec, fromSelector(d.Spec.Selector)
		}
	case "replicaset", "replicasets", "rs":
		var r *apps.ReplicaSet
		if r, err = client.For[*apps.ReplicaSet](c).Get(ctx, ns, name); err == nil {
			spec, err = r.Spec.Template.Spec, fromSelector(r.Spec.Selector)
		}
	case "statefulset", "statefulsets", "sts":
		var s *apps.StatefulSet
		if s, err = client.For[*apps.StatefulSet](c).Get(ctx, ns, name); err == nil {
			spec, err = s.Spec.Template.Spec, fromSelector(s.Spec.Selector)
		}
	case "service", "services", "svc":
		var s *core.Service
		if s, err = client.For[*core.Service](c).Get(ctx, ns, name); err == nil {
			sel, ports = s.Spec.Selector, s.Spec.Ports
		}
	default:
		return nil, fmt.Errorf("cannot expose a %s: expose a pod, deployment, replicaset, statefulset or service", kind)
	}
	if err != nil {
		return nil, err
	}
	for _, ctr := range spec.Containers {
		for _, p := range ctr.Ports {
			ports = append(ports, core.ServicePort{Port: p.ContainerPort, TargetPort: meta.FromInt(p.ContainerPort)})
		}
	}
	for i := range ports {
		ports[i].NodePort = 0
	}
	return &core.Service{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: meta.ObjectMeta{Name: name, Namespace: ns},
		Spec: core.ServiceSpec{Selector: sel, Ports: ports}}, nil
}

// newCreateQuotaCommand is kubectl create quota: a ResourceQuota from
// --hard=NAME=QUANTITY,... and --scopes.
func newCreateQuotaCommand(o *Options) *cobra.Command {
	var g genFlags
	var hard, scopes string
	cmd := &cobra.Command{
		Use:     "quota NAME --hard=pods=10,requests.cpu=2,... [--scopes=BestEffort,...]",
		Aliases: []string{"resourcequota"},
		Short:   "Create a ResourceQuota (kubectl create quota)",
		Example: "  kobectl create quota compute --hard=pods=10,requests.cpu=2,limits.memory=4Gi -n team",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := &core.ResourceQuota{TypeMeta: meta.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"}, ObjectMeta: meta.ObjectMeta{Name: args[0]},
				Spec: core.ResourceQuotaSpec{Hard: resource.List{}}}
			for _, kv := range strings.Split(hard, ",") {
				if kv = strings.TrimSpace(kv); kv == "" {
					continue
				}
				name, value, ok := strings.Cut(kv, "=")
				qty, err := resource.ParseQuantity(value)
				if !ok || err != nil {
					return fmt.Errorf("--hard: %q: want NAME=QUANTITY, as pods=10", kv)
				}
				q.Spec.Hard[resource.Name(name)] = qty
			}
			if scopes != "" {
				q.Spec.Scopes = strings.Split(scopes, ",")
			}
			return emitFor(o, cmd, q, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&hard, "hard", "", "the limits, NAME=QUANTITY,...")
	cmd.Flags().StringVar(&scopes, "scopes", "", "the pods it counts: BestEffort, NotBestEffort, Terminating, NotTerminating, PriorityClass (comma-separated)")
	return cmd
}

// newCreatePDBCommand is kubectl create poddisruptionbudget: a budget
// for the pods --selector picks, with --min-available or
// --max-unavailable (a number or a percentage).
func newCreatePDBCommand(o *Options) *cobra.Command {
	var g genFlags
	var sel, minAvailable, maxUnavailable string
	cmd := &cobra.Command{
		Use:     "poddisruptionbudget NAME --selector=SELECTOR --min-available=N|N% | --max-unavailable=N|N%",
		Aliases: []string{"pdb"},
		Short:   "Create a PodDisruptionBudget (kubectl create poddisruptionbudget)",
		Example: "  # At least one pod labelled app=web stays while nodes are drained\n" +
			"  kobectl create pdb web --selector=app=web --min-available=1\n\n" +
			"  # At most half of them may be evicted at once\n" +
			"  kobectl create pdb web --selector=app=web --max-unavailable=50%",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if sel == "" {
				return fmt.Errorf("--selector: a selector must be specified (the pods the budget covers, as app=web)")
			}
			parsed, err := selector.ParseLabels(sel)
			if err != nil {
				return fmt.Errorf("--selector: %w", err)
			}
			if (minAvailable == "") == (maxUnavailable == "") {
				return fmt.Errorf("one of --min-available and --max-unavailable must be specified, and not both")
			}
			b := &policy.PodDisruptionBudget{TypeMeta: meta.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"}, ObjectMeta: meta.ObjectMeta{Name: args[0]},
				Spec: policy.PodDisruptionBudgetSpec{Selector: selector.ToLabelSelector(parsed)}}
			flag, value, field := "--min-available", minAvailable, &b.Spec.MinAvailable
			if maxUnavailable != "" {
				flag, value, field = "--max-unavailable", maxUnavailable, &b.Spec.MaxUnavailable
			}
			n, err := intOrPercent(value)
			if err != nil {
				return fmt.Errorf("%s: %w", flag, err)
			}
			*field = &n
			return emitFor(o, cmd, b, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().StringVar(&sel, "selector", "", "the label selector of the pods the budget covers")
	cmd.Flags().StringVar(&minAvailable, "min-available", "", "the pods that must stay available: a number (2) or a percentage (50%)")
	cmd.Flags().StringVar(&maxUnavailable, "max-unavailable", "", "the pods that may be unavailable at once: a number (1) or a percentage (25%)")
	return cmd
}

// intOrPercent reads a count or a percentage, as "2" or "50%".
func intOrPercent(s string) (meta.IntOrString, error) {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil && n >= 0 {
		return meta.FromInt(int32(n)), nil
	}
	if p, ok := strings.CutSuffix(s, "%"); ok {
		if n, err := strconv.Atoi(p); err == nil && n >= 0 {
			return meta.FromString(s), nil
		}
	}
	return meta.IntOrString{}, fmt.Errorf("%q is neither a number nor a percentage (as 2 or 50%%)", s)
}

// newCreatePriorityClassCommand is kubectl create priorityclass.
func newCreatePriorityClassCommand(o *Options) *cobra.Command {
	var g genFlags
	var value int32
	var description, preemption string
	var globalDefault bool
	cmd := &cobra.Command{
		Use:     "priorityclass NAME --value=N [--description=TEXT] [--preemption-policy=Never]",
		Aliases: []string{"pc"},
		Short:   "Create a PriorityClass (kubectl create priorityclass)",
		Example: "  # Pods naming it (priorityClassName: high) are scheduled first and may preempt lower ones\n" +
			"  kobectl create priorityclass high --value=1000 --description=\"serving traffic\"\n\n" +
			"  # Scheduled first, but never preempts\n" +
			"  kobectl create priorityclass batch-first --value=500 --preemption-policy=Never",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if globalDefault {
				return fmt.Errorf("--global-default: not supported by kobune: pods that name no class get priority 0; name the class in the pods (priorityClassName: %s)", args[0])
			}
			pc := &scheduling.PriorityClass{TypeMeta: meta.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"}, ObjectMeta: meta.ObjectMeta{Name: args[0]},
				Value: value, Description: description, PreemptionPolicy: &preemption}
			return emitFor(o, cmd, pc, &g)
		},
	}
	g.register(cmd)
	cmd.Flags().Int32Var(&value, "value", 0, "the priority: pods of higher classes are scheduled first")
	cmd.Flags().StringVar(&description, "description", "", "what the class is for")
	cmd.Flags().StringVar(&preemption, "preemption-policy", "PreemptLowerPriority", "PreemptLowerPriority or Never")
	cmd.Flags().BoolVar(&globalDefault, "global-default", false, "the class of pods that name none (not supported by kobune: refused)")
	return cmd
}
