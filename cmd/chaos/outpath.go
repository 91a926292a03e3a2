package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
)

// checkOutPath is the first check of every output flag (results, report,
// journal, bench, starter experiment, CPU profile): the path is not
// empty; if it exists it is a regular file (a directory, a symbolic link,
// a FIFO, a device or a socket is never written over nor through); no
// folder on its way is a regular file; and it is none of the command's
// inputs (an output never replaces what the command reads). Any breach is
// a usage error (exit 2) naming the flag, before anything runs.
func checkOutPath(flag, path string, inputs ...string) error {
	bad := func(format string, args ...any) error {
		return usageError(fmt.Errorf("--%s %q: "+format, append([]any{flag, path}, args...)...))
	}
	if path == "" {
		return bad("want a file name")
	}
	st, err := os.Lstat(path)
	switch {
	case err == nil && !st.Mode().IsRegular():
		return bad("is %s, not a regular file: give a file name", boundedread.FileType(st.Mode()))
	case err != nil && !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR): // ENOTDIR: see below
		return bad("%v", unwrapPathError(err))
	}
	for dir := filepath.Dir(path); ; dir = filepath.Dir(dir) {
		if dst, err := os.Stat(dir); err == nil {
			if !dst.IsDir() {
				return bad("%s is not a directory", dir)
			}
			break
		}
		if dir == filepath.Dir(dir) {
			break
		}
	}
	for _, in := range inputs {
		if in != "" && sameFile(path, in) {
			return bad("is the input %s: an output never replaces an input", in)
		}
	}
	return nil
}

// checkDistinct refuses two output flags naming the same file.
func checkDistinct(flagA, a, flagB, b string) error {
	if a != "" && b != "" && sameFile(a, b) {
		return usageError(fmt.Errorf("--%s and --%s both name %s: give each its own file", flagA, flagB, a))
	}
	return nil
}

// sameFile reports whether a and b name one file: the same existing file,
// or the same absolute path.
func sameFile(a, b string) bool {
	sa, errA := os.Stat(a)
	sb, errB := os.Stat(b)
	if errA == nil && errB == nil {
		return os.SameFile(sa, sb)
	}
	absA, errA := filepath.Abs(a)
	absB, errB := filepath.Abs(b)
	return errA == nil && errB == nil && absA == absB
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
