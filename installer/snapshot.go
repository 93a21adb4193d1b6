package installer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// EtcdDataDir is the API server's --data-dir on a control plane: the
// embedded etcd's data and its client socket (root only).
const EtcdDataDir = VarDir + "/etcd"

// The embedded etcd's member, as the API server starts it (apiserver/etcd/etcd.go):
// a restored data directory must name the same, or the API server would
// not start on it.
const (
	embeddedMemberName   = "default"
	embeddedPeerURL      = "https://127.0.0.1:0"
	embeddedClusterToken = "etcd-cluster"
)

// RestoreRevisionBump is how far a restore moves the revision past the
// snapshot's, with every older revision marked compacted (etcdutl's
// --bump-revision and --mark-compacted, as Kubernetes' docs advise): a
// client that saw a later revision of the lost state does not take the
// restored one for older, and every watch and informer lists again.
const RestoreRevisionBump = 1_000_000_000

// SnapshotInfo is what a snapshot holds.
type SnapshotInfo struct {
	Revision int64
	Keys     int
	Bytes    int64
}

// SaveSnapshot takes an online, consistent snapshot of the embedded
// etcd in dataDir through etcd's snapshot API (the server streams a
// point-in-time copy of its database while it keeps serving) and writes
// it to file, checked.
func SaveSnapshot(ctx context.Context, dataDir, file string) (SnapshotInfo, error) {
	sock := filepath.Join(dataDir, "client.sock")
	if _, err := os.Stat(sock); err != nil {
		return SnapshotInfo{}, fmt.Errorf("no etcd client socket at %s: is kobune-apiserver running with --data-dir %s on this machine? (systemctl status kobune-apiserver)", sock, dataDir)
	}
	cfg := clientv3.Config{Endpoints: []string{"unix://" + sock}, DialTimeout: 10 * time.Second}
	if _, err := snapshot.NewV3(zap.NewNop()).Save(ctx, cfg, file); err != nil {
		return SnapshotInfo{}, fmt.Errorf("etcd snapshot: %w", err)
	}
	return CheckSnapshot(file)
}

// CheckSnapshot reads a snapshot file and checks its integrity: the
// SHA-256 etcd appends to the database it streams must match, and the
// database must open. A truncated or altered file is refused.
func CheckSnapshot(file string) (SnapshotInfo, error) {
	f, err := os.Open(file)
	if err != nil {
		return SnapshotInfo{}, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return SnapshotInfo{}, err
	}
	// etcd's database is a whole number of 512-byte pages; the snapshot API
	// appends its SHA-256 (32 bytes).
	if st.Size() < 512+sha256.Size || st.Size()%512 != sha256.Size {
		return SnapshotInfo{}, fmt.Errorf("%s is not a whole etcd snapshot (%d bytes: a database of 512-byte pages and its 32-byte SHA-256): it is truncated or not a snapshot; take a new one with kobeadm snapshot save", file, st.Size())
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, st.Size()-sha256.Size); err != nil {
		return SnapshotInfo{}, err
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return SnapshotInfo{}, err
	}
	if !bytes.Equal(h.Sum(nil), want) {
		return SnapshotInfo{}, fmt.Errorf("%s is corrupt: its content does not match the SHA-256 etcd wrote at its end; take a new one with kobeadm snapshot save (a copy of an earlier snapshot may still be whole: kobeadm snapshot status FILE)", file)
	}
	s, err := snapshot.NewV3(zap.NewNop()).Status(file)
	if err != nil {
		return SnapshotInfo{}, fmt.Errorf("%s: %w", file, err)
	}
	return SnapshotInfo{Revision: s.Revision, Keys: s.TotalKey, Bytes: s.TotalSize}, nil
}

// RestoreSnapshot makes a new etcd data directory from a snapshot, for
// the API server to start on: the snapshot is checked first; dataDir must
// not exist (or be empty), so nothing is overwritten.
func RestoreSnapshot(file, dataDir string) (SnapshotInfo, error) {
	info, err := CheckSnapshot(file)
	if err != nil {
		return info, err
	}
	if entries, err := os.ReadDir(dataDir); err == nil && len(entries) > 0 {
		return info, fmt.Errorf("%s exists and is not empty: stop kobune-apiserver (systemctl stop kobune-apiserver) and move it away (mv %s %s.old), or give --data-dir a new directory", dataDir, dataDir, dataDir)
	} else if err == nil {
		if err := os.Remove(dataDir); err != nil {
			return info, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return info, err
	}
	if err := os.MkdirAll(filepath.Dir(dataDir), 0o700); err != nil {
		return info, err
	}
	err = snapshot.NewV3(zap.NewNop()).Restore(snapshot.RestoreConfig{
		SnapshotPath: file, Name: embeddedMemberName, OutputDataDir: dataDir,
		PeerURLs: []string{embeddedPeerURL}, InitialCluster: embeddedMemberName + "=" + embeddedPeerURL, InitialClusterToken: embeddedClusterToken,
		RevisionBump: RestoreRevisionBump, MarkCompacted: true,
	})
	if err != nil {
		return info, fmt.Errorf("restore %s into %s: %w", file, dataDir, err)
	}
	if err := os.Chmod(dataDir, 0o700); err != nil {
		return info, err
	}
	return info, nil
}
