package vmcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
)

// TestStdioBackendEnvironment: a stdio backend gets the configured env plus
// a small allowlist (PATH, HOME…) of the gateway's environment, never the
// rest of it (the bearer token's variable included).
//
// Serial: it sets the gateway's environment (t.Setenv), which every stdio
// backend a parallel test starts would inherit.
func TestStdioBackendEnvironment(t *testing.T) {
	t.Setenv("VMCP_TEST_BEARER", "tok-must-not-leak")
	t.Setenv("SOME_OTHER_SECRET", "must-not-leak-either")
	t.Setenv("HOME", "/home/vmcp-test")
	dir := t.TempDir()
	script := filepath.Join(dir, "gamma.yaml")
	if err := os.WriteFile(script, []byte(stdioScript), 0o600); err != nil {
		t.Fatal(err)
	}
	envFile := filepath.Join(dir, "env.txt")
	// sh records the environment it was given, then serves the script.
	cmd := fmt.Sprintf(`[%q, "-c", "env > \"$ENV_OUT\" && exec \"$0\" \"$1\"", %q, %q]`, "/bin/sh", stdioBackendBin, script)
	cfg := "name: t\nbackends:\n  - name: gamma\n    transport: stdio\n    command: " + cmd +
		"\n    env: {ENV_OUT: \"" + envFile + "\", GAMMA_MODE: fast}\n" +
		"timeouts: {initialize: 10s, call: 5s, close: 500ms}\n"
	g := startGateway(t, cfg)
	c := connect(t, g.URL(), false)
	if res, _ := callTool(t, c, "gamma_echo", map[string]any{"v": 1}); res.IsError {
		t.Fatalf("echo: %s", resultText(res))
	}
	var data []byte
	testwait.For(t, 5*time.Second, "gamma to write "+envFile, func() bool {
		var err error
		data, err = os.ReadFile(envFile)
		return err == nil && len(data) > 0
	})
	env := map[string]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	if env["GAMMA_MODE"] != "fast" || env["ENV_OUT"] != envFile {
		t.Errorf("configured env missing: %v", env)
	}
	if env["PATH"] == "" || env["HOME"] != "/home/vmcp-test" {
		t.Errorf("allowlisted PATH/HOME missing: %v", env)
	}
	if strings.Contains(string(data), "tok-must-not-leak") || strings.Contains(string(data), "must-not-leak-either") {
		t.Fatalf("the stdio backend inherited the gateway's secrets:\n%s", data)
	}
}
