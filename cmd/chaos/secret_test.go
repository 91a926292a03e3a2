package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestResolveSecret: flag, then file (trimmed), then the environment; both
// flag and file, an empty or missing file are usage errors (exit 2).
func TestResolveSecret(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte(" from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TEST_SECRET_ENV", "from-env")
	for _, tc := range []struct{ flag, file, want string }{
		{"from-flag", "", "from-flag"}, {"", file, "from-file"}, {"", "", "from-env"},
	} {
		got, err := resolveSecret("t", tc.flag, "t-file", tc.file, "TEST_SECRET_ENV")
		if err != nil || got != tc.want {
			t.Errorf("resolveSecret(%q, %q) = %q, %v; want %q", tc.flag, tc.file, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ flag, file, want string }{
		{"x", file, "not both"}, {"", empty, "is empty"}, {"", filepath.Join(dir, "nope"), "no such file"},
	} {
		_, err := resolveSecret("t", tc.flag, "t-file", tc.file, "TEST_SECRET_ENV")
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("resolveSecret(%q, %q): %v (exit %d); want exit 2 saying %q", tc.flag, tc.file, err, exitCode(err), tc.want)
		}
	}
}

// TestProxyAdminTokenFile: the proxy takes its control-API token from a
// file too, documented in --help.
func TestProxyAdminTokenFile(t *testing.T) {
	help, _ := exec.Command(chaosBin, "proxy", "--help").CombinedOutput()
	if !strings.Contains(string(help), "--admin-token-file") {
		t.Fatalf("proxy --help does not document --admin-token-file:\n%s", help)
	}
	out, err := exec.Command(chaosBin, "proxy", "--upstream", "http://127.0.0.1:9/mcp", "--admin-token", "x", "--admin-token-file", "/dev/null").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not both") {
		t.Fatalf("proxy with both token flags: %v, %s; want exit 2 saying not both", err, out)
	}
}
