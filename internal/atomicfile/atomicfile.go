// Package atomicfile writes a file whole or not at all: into a temporary
// file beside it, renamed over it once written, so an interrupted writer
// never leaves a partial file under the final name.
package atomicfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// tempPrefix starts every temporary file's name: ".chaos-tmp-<pid>-", so a
// writer killed before it could remove its file (SIGKILL) leaves one whose
// owner is known (see Owner).
const tempPrefix = ".chaos-tmp-"

// Write writes path with write's output, mode 0644: in a temporary file in
// the same directory, synced and renamed over path. On any error (write's
// included) the temporary file is removed and path is left as it was.
func Write(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, tempPrefix+strconv.Itoa(os.Getpid())+"-*-"+filepath.Base(path))
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = os.Remove(tmp.Name())
		}
	}()
	// The file is closed whatever happens.
	if err := errors.Join(write(tmp), tmp.Chmod(0o644), tmp.Sync(), tmp.Close()); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	renamed = true
	return nil
}

// Owner returns the pid of the process that made a temporary file named
// name (a base name), and whether name is one of Write's temporary files.
func Owner(name string) (int, bool) {
	rest, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return 0, false
	}
	digits, _, ok := strings.Cut(rest, "-")
	if !ok {
		return 0, false
	}
	pid, err := strconv.Atoi(digits)
	return pid, err == nil && pid > 0
}
