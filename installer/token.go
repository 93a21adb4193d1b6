package installer

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kobune/kobune/api/core"
	"github.com/kobune/kobune/api/meta"
	"github.com/kobune/kobune/api/rbac"
	"github.com/kobune/kobune/client"
)

// DefaultTokenTTL is how long init's token and token create's live
// (kubeadm's 24 h).
const DefaultTokenTTL = 24 * time.Hour

// What kubeadm's bootstrap-token phase makes beside the token, at its
// names: anonymous callers may read cluster-info (a joining machine has no
// credentials it can use before it trusts the cluster), and tokens of
// kubeadm's group may read nodes (join refuses a name a live node has).
const (
	ClusterInfoRole = "kubeadm:bootstrap-signer-clusterinfo"
	GetNodesRole    = "kubeadm:get-nodes"
)

// ClusterInfoKubeconfig is cluster-info's kubeconfig: the cluster's
// address and CA, no user (kubeadm's).
func ClusterInfoKubeconfig(server string, caPEM []byte) (string, error) {
	b, err := yaml.Marshal(client.Kubeconfig{APIVersion: "v1", Kind: "Config",
		Clusters: []client.NamedCluster{{Name: "", Cluster: client.Cluster{Server: server, CertificateAuthorityData: base64.StdEncoding.EncodeToString(caPEM)}}}})
	return string(b), err
}

// bootstrapToken is init's bootstrap-token phase: cluster-info, the two
// grants, and a first token, printed with the join command.
func bootstrapToken(ctx context.Context, c *Config) error {
	cl, err := client.Dial("", AdminConf)
	if err != nil {
		return err
	}
	defer cl.Close()
	caPEM, err := os.ReadFile(PKIDir + "/ca.crt")
	if err != nil {
		return err
	}
	if err := PublishClusterInfo(ctx, cl, "https://"+c.Address+":6443", caPEM); err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "\tcluster-info in kube-public (the address and CA joining machines discover, signed with each token by kobune-controller's bootstrap signer)\n")
	fmt.Fprintf(c.Out, "\t%s: anyone may read cluster-info; %s: tokens may read nodes (join refuses a live node's name)\n", ClusterInfoRole, GetNodesRole)
	b, err := CreateToken(ctx, cl, c.TokenTTL, "made by kobeadm init")
	if err != nil {
		return err
	}
	c.JoinCommand, err = JoinCommand(c.Address+":6443", b.Token(), caPEM)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Out, "\ttoken %s, valid %s (kobeadm token create --print-join-command makes another); the join line: %s\n", b.ID, ttlText(b), c.JoinCommand)
	return nil
}

// PublishClusterInfo writes cluster-info and the grants that go with it.
func PublishClusterInfo(ctx context.Context, cl *client.Client, server string, caPEM []byte) error {
	kc, err := ClusterInfoKubeconfig(server, caPEM)
	if err != nil {
		return err
	}
	maps := client.For[*core.ConfigMap](cl)
	have, err := maps.Get(ctx, client.ClusterInfoNamespace, client.ClusterInfoName)
	switch {
	case client.IsNotFound(err):
		_, err = maps.Create(ctx, &core.ConfigMap{ObjectMeta: meta.ObjectMeta{Namespace: client.ClusterInfoNamespace, Name: client.ClusterInfoName},
			Data: map[string]string{client.ClusterInfoKubeconfig: kc}})
	case err == nil && have.Data[client.ClusterInfoKubeconfig] != kc:
		if have.Data == nil {
			have.Data = map[string]string{}
		}
		have.Data[client.ClusterInfoKubeconfig] = kc
		_, err = maps.Update(ctx, have)
	}
	if err != nil {
		return fmt.Errorf("cluster-info: %s", client.Message(err))
	}
	subject := func(kind, name string) []rbac.Subject {
		return []rbac.Subject{{Kind: kind, APIGroup: rbac.GroupName, Name: name}}
	}
	for _, o := range []meta.Object{
		&rbac.Role{ObjectMeta: meta.ObjectMeta{Namespace: client.ClusterInfoNamespace, Name: ClusterInfoRole},
			Rules: []rbac.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{client.ClusterInfoName}}}},
		&rbac.RoleBinding{ObjectMeta: meta.ObjectMeta{Namespace: client.ClusterInfoNamespace, Name: ClusterInfoRole},
			RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "Role", Name: ClusterInfoRole}, Subjects: subject(rbac.UserKind, "system:anonymous")},
		&rbac.ClusterRole{ObjectMeta: meta.ObjectMeta{Name: GetNodesRole},
			Rules: []rbac.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"nodes"}}}},
		&rbac.ClusterRoleBinding{ObjectMeta: meta.ObjectMeta{Name: GetNodesRole},
			RoleRef: rbac.RoleRef{APIGroup: rbac.GroupName, Kind: "ClusterRole", Name: GetNodesRole}, Subjects: subject(rbac.GroupKind, client.DefaultNodeTokenGroup)},
	} {
		if err := createOrKeep(ctx, cl, o); err != nil {
			return err
		}
	}
	return nil
}

func createOrKeep(ctx context.Context, cl *client.Client, o meta.Object) error {
	var err error
	switch v := o.(type) {
	case *rbac.Role:
		_, err = client.For[*rbac.Role](cl).Create(ctx, v)
	case *rbac.RoleBinding:
		_, err = client.For[*rbac.RoleBinding](cl).Create(ctx, v)
	case *rbac.ClusterRole:
		_, err = client.For[*rbac.ClusterRole](cl).Create(ctx, v)
	case *rbac.ClusterRoleBinding:
		_, err = client.For[*rbac.ClusterRoleBinding](cl).Create(ctx, v)
	}
	if err != nil && !client.IsAlreadyExists(err) {
		return fmt.Errorf("%s: %s", o.GetObjectMeta().Name, client.Message(err))
	}
	return nil
}

// CreateToken makes a token of kubeadm's defaults (authentication and
// signing, kubeadm's default-node-token group); ttl 0 never expires.
func CreateToken(ctx context.Context, cl *client.Client, ttl time.Duration, description string) (client.BootstrapToken, error) {
	b, err := cl.MakeBootstrapToken(ctx, ttl, description)
	if err != nil {
		return b, fmt.Errorf("create token: %s", client.Message(err))
	}
	return b, nil
}

// JoinCommand is the whole `kobeadm join` line for a token, the CA's
// public-key hash pinned.
func JoinCommand(endpoint, token string, caPEM []byte) (string, error) {
	ca, err := parseCA(caPEM)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("kobeadm join %s --token %s --discovery-token-ca-cert-hash %s", endpoint, token, client.CAHash(ca)), nil
}

func parseCA(caPEM []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(caPEM)
	if block == nil {
		return nil, errors.New("no PEM certificate in the CA")
	}
	return x509.ParseCertificate(block.Bytes)
}

func ttlText(b client.BootstrapToken) string {
	if b.Expires.IsZero() {
		return "forever (--ttl 0)"
	}
	return "until " + b.Expires.UTC().Format(time.RFC3339)
}

// ListTokens prints the tokens as kubeadm token list does.
func ListTokens(ctx context.Context, cl *client.Client, out io.Writer) error {
	secrets, _, err := client.For[*core.Secret](cl).List(ctx, client.BootstrapTokenNamespace, client.ListOptions{FieldSelector: "type=" + client.BootstrapTokenSecretType})
	if err != nil {
		return fmt.Errorf("list tokens: %s", client.Message(err))
	}
	tw := tabwriter.NewWriter(out, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "TOKEN\tTTL\tEXPIRES\tUSAGES\tDESCRIPTION\tEXTRA GROUPS")
	now := time.Now()
	slices.SortFunc(secrets, func(a, b *core.Secret) int { return strings.Compare(a.Name, b.Name) })
	for _, s := range secrets {
		b, ok := client.ParseBootstrapTokenSecret(s)
		if !ok {
			fmt.Fprintf(tw, "%s\t<malformed>\t\t\t\t\n", s.Name)
			continue
		}
		ttl, expires := "<forever>", "<never>"
		if !b.Expires.IsZero() {
			expires = b.Expires.UTC().Format(time.RFC3339)
			if ttl = b.Expires.Sub(now).Round(time.Minute).String(); b.Expired(now) {
				ttl = "<expired>"
			}
		}
		usages := strings.Join(b.Usages, ",")
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", b.Token(), ttl, expires, usages, b.Description, strings.Join(b.Groups, ","))
	}
	return tw.Flush()
}

// DeleteTokens deletes tokens by id or whole token.
func DeleteTokens(ctx context.Context, cl *client.Client, out io.Writer, ids []string) error {
	for _, id := range ids {
		id, _, _ = strings.Cut(id, ".")
		err := client.For[*core.Secret](cl).Delete(ctx, client.BootstrapTokenNamespace, client.BootstrapTokenSecretPrefix+id, client.DeleteOptions{})
		if client.IsNotFound(err) {
			return fmt.Errorf("token %q not found (kobeadm token list shows the tokens)", id)
		}
		if err != nil {
			return fmt.Errorf("delete token %s: %s", id, client.Message(err))
		}
		fmt.Fprintf(out, "bootstrap token %q deleted\n", id)
	}
	return nil
}
