package runtimes

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// TailBuffer is an io.Writer that keeps the last max bytes written, for
// error messages that quote a process's stderr.
type TailBuffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// NewTailBuffer returns a TailBuffer that keeps the last max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

// Write keeps the tail of p.
func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > t.max {
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
	}
	return len(p), nil
}

// String returns what is kept, trimmed.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// quotedLines is how many of a gateway's last output lines an error
// message quotes; the whole output goes to a file (saveOutput).
const quotedLines = 20

// QuoteTail formats a stderr tail for an error message ("" when empty):
// its last quotedLines lines, and the file holding all of it.
func QuoteTail(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(s, "\n")
	cut := ""
	if len(lines) > quotedLines {
		cut = fmt.Sprintf("(last %d of %d lines)\n", quotedLines, len(lines))
		lines = lines[len(lines)-quotedLines:]
	}
	out := "\nstderr:\n" + cut + strings.Join(lines, "\n")
	if path, err := saveOutput(s); err == nil {
		out += "\n(the whole output: " + path + ")"
	}
	return out
}

// OutputDirEnv names the folder where a gateway's output is saved when it
// fails to start (default: vmcp-chaos-logs in the temporary directory).
const OutputDirEnv = "VMCP_CHAOS_LOG_DIR"

var outputSeq atomic.Int64

// saveOutput writes a failed gateway's output to a file of its own and
// returns its path. The files are kept: they are the evidence.
func saveOutput(s string) (string, error) {
	dir := os.Getenv(OutputDirEnv)
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "vmcp-chaos-logs")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("gateway-%s-%d-%d.log", time.Now().Format("20060102-150405"), os.Getpid(), outputSeq.Add(1)))
	return path, os.WriteFile(path, []byte(s+"\n"), 0o600)
}
