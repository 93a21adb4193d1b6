package runtime

// Termination messages, as the kubelet keeps them: each container attempt
// gets an empty, world-writable file on the node, bind-mounted at its
// terminationMessagePath (default /dev/termination-log). When the attempt
// ends, what the process wrote there (at most 4 KiB) becomes the message
// of its terminated state. Under the policy FallbackToLogsOnError, an
// empty file and a failed container give the last 80 lines of its log
// instead (at most 2 KiB), the message a crash usually needs.

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/kobune/kobune/agent/containerlog"
	"github.com/kobune/kobune/api/core"
)

// Labels a container's termination message is found by.
const (
	LabelTerminationFile = "kobune.io/termination-message-file"
	// LabelTerminationLog is the attempt's log file, set under
	// FallbackToLogsOnError only.
	LabelTerminationLog = "kobune.io/termination-message-log"
)

// The kubelet's bounds (MaxContainerTerminationMessageLength and the
// ...LogLength/LogLines of its fallback).
const (
	maxTerminationMessage = 4 << 10
	maxFallbackLog        = 2 << 10
	fallbackLogLines      = 80
)

// terminationDir holds a pod's termination message files, one per
// container attempt; it goes with the pod.
const terminationDir = "termination"

// terminationFile makes the empty file of one attempt and says where it
// is on the node. The file is mode 0666, as the kubelet's: a container
// that runs as any user can write its message.
func terminationFile(podDir string, pod *core.Pod, container string, attempt int32) (string, error) {
	path := filepath.Join(podDir, pod.UID, terminationDir, container+"-"+strconv.Itoa(int(attempt)))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return "", err
	}
	if err := os.WriteFile(path, nil, 0o666); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o666) // past the umask
}

// terminationMessage reads the message of an attempt that exited with
// code, from the files its labels name.
func terminationMessage(labels map[string]string, code int) string {
	msg := readUpTo(labels[LabelTerminationFile], maxTerminationMessage)
	if msg == "" && code != 0 && labels[LabelTerminationLog] != "" {
		msg = logTail(labels[LabelTerminationLog], fallbackLogLines, maxFallbackLog)
	}
	return msg
}

func readUpTo(path string, n int64) string {
	if path == "" {
		return ""
	}
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	b, _ := io.ReadAll(io.LimitReader(f, n))
	return string(b)
}

// logTail is the text of the last lines of a container log file, at most
// n bytes of it (the end, when the lines are longer).
func logTail(path string, lines int64, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	off, err := containerlog.TailOffset(f, lines)
	if err != nil {
		return ""
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return ""
	}
	var out bytes.Buffer
	r := containerlog.NewReader(f, containerlog.Options{})
	if r.Copy(&out) != nil || r.Flush(&out) != nil {
		return ""
	}
	b := out.Bytes()
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
