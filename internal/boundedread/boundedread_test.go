package boundedread

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFile: a regular file within its limit is read whole; one over it,
// a device, a FIFO (without blocking on it), a directory and a missing
// file are refused with an *Error naming the file, the kind and the limit;
// a symbolic link to a regular file is followed.
func TestFile(t *testing.T) {
	dir := t.TempDir()
	small := Kind{"test file", 16}
	ok := filepath.Join(dir, "ok")
	if err := os.WriteFile(ok, []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte("0123456789abcdefX"), 0o644); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(ok, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{ok, link} {
		data, err := File(p, small)
		if err != nil || string(data) != "0123456789abcdef" {
			t.Fatalf("File(%s) = %q, %v", p, data, err)
		}
	}
	cases := []struct {
		path string
		is   error
		want string
	}{
		{big, ErrTooLarge, big + ": test file larger than 16 bytes (the limit for a test file)"},
		{"/dev/zero", ErrNotRegular, "/dev/zero: test file: not a regular file (a character device)"},
		{fifo, ErrNotRegular, "a FIFO"},
		{dir, ErrNotRegular, "a directory"},
		{filepath.Join(dir, "missing"), os.ErrNotExist, "missing: cannot read test file: no such file or directory"},
	}
	for _, tc := range cases {
		done := make(chan error, 1)
		go func() { _, err := File(tc.path, small); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("File(%s) did not return within 10s", tc.path)
		}
		var be *Error
		if !errors.As(err, &be) || !errors.Is(err, tc.is) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("File(%s) = %v; want an *Error (%v) saying %q", tc.path, err, tc.is, tc.want)
		}
	}
}

// TestSize: limits read as documented.
func TestSize(t *testing.T) {
	for n, want := range map[int64]string{64 << 10: "64 KiB", 4 << 20: "4 MiB", 256 << 20: "256 MiB", 1000: "1000 bytes"} {
		if got := Size(n); got != want {
			t.Errorf("Size(%d) = %q, want %q", n, got, want)
		}
	}
}
