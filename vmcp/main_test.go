package vmcp_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"go.uber.org/goleak"
)

// stdioBackendBin is the path of the stdio fake backend built for the tests.
var stdioBackendBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "vmcp-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	stdioBackendBin = filepath.Join(dir, "stdiobackend")
	build := exec.Command("go", "build", "-o", stdioBackendBin, "./testdata/stdiobackend")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build stdio backend:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}
