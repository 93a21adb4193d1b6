package runtime

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/containerlog"
)

// TestFallbackMessageWaitsForTheLogger: containerd reports a container's
// exit before its logging process has written the last output (a line
// without a newline, written when the stream ends): the message of a
// failed container under FallbackToLogsOnError is that output, not empty.
func TestFallbackMessageWaitsForTheLogger(t *testing.T) {
	dir := t.TempDir()
	logPath, msgPath := filepath.Join(dir, "0.log"), filepath.Join(dir, "message")
	if err := os.WriteFile(msgPath, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	logger, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer logger.Close()
	if err := syscall.Flock(int(logger.Fd()), syscall.LOCK_EX); err != nil { // as RunLogger holds it
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		var b bytes.Buffer
		_ = containerlog.Write(&b, strings.NewReader("DONE"), nil, time.Now)
		logger.Write(b.Bytes())
		syscall.Flock(int(logger.Fd()), syscall.LOCK_UN)
	}()
	got := terminationMessage(map[string]string{LabelTerminationFile: msgPath, LabelTerminationLog: logPath}, 1)
	if got != "DONE" {
		t.Errorf("termination message %q, want the output the logger wrote after the exit, %q", got, "DONE")
	}
}

// TestContainerIDsFitContainerd: a container's id is its pod's uid and its
// name, shortened (with a hash of the name) when containerd would refuse
// it — a 63-character name once made CreateContainerError "identifier
// ... greater than maximum length (76 characters)".
func TestContainerIDsFitContainerd(t *testing.T) {
	uid := "cb19594d-4cf0-4629-85a1-9c4fc8293743"
	if got := containerID(uid, "app"); got != uid+"-app" {
		t.Errorf("short name: %q", got)
	}
	long := "busybox-scheduling-76cc386d-db4b-47af-a3fe-366bafcb3f45"
	other := "busybox-scheduling-76cc386d-db4b-47af-a3fe-366bafcb3f46"
	a, b := containerID(uid, long), containerID(uid, other)
	if len(a) > 76 || len(b) > 76 || a == b || a != containerID(uid, long) || !strings.HasPrefix(a, uid+"-busybox-scheduling-") {
		t.Errorf("long names: %q (%d), %q (%d); want distinct ids of at most 76 characters, the same each time", a, len(a), b, len(b))
	}
}
