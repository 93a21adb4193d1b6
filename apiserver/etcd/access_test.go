package etcd

import (
	"crypto/tls"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestEmbeddedEtcdOnlyForTheAPIServer: the embedded etcd's client endpoint
// is a unix socket in a 0700 directory (a non-root user cannot even list
// it), and its peer port takes no connection without the per-start
// client certificate.
func TestEmbeddedEtcdOnlyForTheAPIServer(t *testing.T) {
	base := t.TempDir()
	// The temporary directories are open to everyone, so only etcd's own
	// directory can keep a user out.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(base, "etcd")
	b, err := StartEmbedded(dir, "fatal", 64<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for path, want := range map[string]os.FileMode{dir: 0o700, filepath.Join(dir, "client.sock"): 0o600, filepath.Join(dir, "peer-tls", "peer.key"): 0o600} {
		fi, err := os.Stat(path)
		if err != nil || fi.Mode().Perm() != want {
			t.Errorf("%s: %v %v, want mode %v", path, fi.Mode(), err, want)
		}
	}
	if len(b.embed.Clients) != 1 || b.embed.Clients[0].Addr().Network() != "unix" {
		t.Errorf("etcd client listeners %v: want one unix socket", b.embed.Clients)
	}
	peer := b.embed.Peers[0].Addr().String()
	if !strings.HasPrefix(peer, "127.0.0.1:") {
		t.Errorf("peer listener on %s, want loopback", peer)
	}
	// Without a certificate: refused in the TLS handshake.
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", peer, &tls.Config{InsecureSkipVerify: true})
	if err == nil {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write([]byte("GET /members HTTP/1.1\r\nHost: x\r\n\r\n"))
		buf := make([]byte, 512)
		n, rerr := conn.Read(buf)
		conn.Close()
		if rerr == nil && n > 0 {
			t.Errorf("the peer port answered a client without a certificate: %q", buf[:n])
		}
	}
	if os.Geteuid() != 0 {
		t.Skip("the non-root check needs root to switch to nobody")
	}
	ls := exec.Command("/bin/ls", dir)
	ls.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	if out, err := ls.CombinedOutput(); err == nil || !strings.Contains(string(out), "Permission denied") {
		t.Errorf("user nobody listed etcd's directory: %v %s", err, out)
	}
}
