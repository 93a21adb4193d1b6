package localpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// Serve serves the driver's Identity, Controller and Node services on the
// unix socket at path (mode 0600: only root on the node talks to a CSI
// driver) until ctx ends. A socket left by a killed driver is replaced.
func Serve(ctx context.Context, d *Driver, path string) error {
	// Linux keeps a socket's path in 108 bytes, the terminating NUL
	// included; a longer one fails with a bare "invalid argument".
	if len(path) > 107 {
		return fmt.Errorf("socket path %s is %d bytes, longer than the 107 a unix socket may have: give the node a shorter state directory", path, len(path))
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return err
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove the old socket: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return err
	}
	s := grpc.NewServer()
	csi.RegisterIdentityServer(s, d)
	csi.RegisterControllerServer(s, d)
	csi.RegisterNodeServer(s, d)
	go func() {
		<-ctx.Done()
		s.GracefulStop()
	}()
	err = s.Serve(l)
	_ = os.Remove(path)
	if ctx.Err() != nil {
		return nil
	}
	return err
}
