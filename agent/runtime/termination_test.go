package runtime

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kobune/kobune/agent/containerlog"
)

// TestFallbackMessageHasOutputWithoutANewline: a failed container that
// wrote "DONE" without a newline and exited has it as its termination
// message under FallbackToLogsOnError. The logging process used to keep
// such bytes until the stream closed (when the task was deleted, seconds
// after the exit the status reports), so the message was empty.
func TestFallbackMessageHasOutputWithoutANewline(t *testing.T) {
	dir := t.TempDir()
	logPath, msgPath := filepath.Join(dir, "0.log"), filepath.Join(dir, "message")
	if err := os.WriteFile(msgPath, nil, 0o666); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o640)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	stdout, w := io.Pipe()
	defer w.Close() // the stream stays open while the test looks, as the shim keeps it
	go containerlog.Write(logFile, stdout, nil, time.Now)
	if _, err := w.Write([]byte("DONE")); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{LabelTerminationFile: msgPath, LabelTerminationLog: logPath}
	var got string
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if got = terminationMessage(labels, 1); got == "DONE" {
			return
		}
	}
	t.Errorf("termination message %q, want the output written without a newline, %q", got, "DONE")
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
	// containerd 1.6 refuses two separators in a row: a name cut right
	// after a dash (the filler pods of Kubernetes' scheduling tests), a
	// name with "--", and one of dashes only become valid ids, each its own.
	cut := "filler-pod-8180b1e2-585a-4a41-bf90-cfe9b454e154"
	ids := map[string]bool{}
	for _, name := range []string{cut, "a--b", "a-b", "x---"} {
		id := containerID(uid, name)
		if len(id) > 76 || !identifier.MatchString(id) || ids[id] {
			t.Errorf("%q: id %q (%d characters); want a valid containerd identifier of its own", name, id, len(id))
		}
		ids[id] = true
	}
}
