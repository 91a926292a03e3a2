package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/inject"
	"github.com/vmcp-chaos/vmcp-chaos/kube/injecttest"
	"github.com/vmcp-chaos/vmcp-chaos/kube/kubetest"
)

// TestKubeInjectKilledLeaseRestores runs chaos kube inject against a real
// API server and kills it (SIGKILL) mid-injection: the Lease is no longer
// renewed, and the proxy — chaos kube proxy run as a local process with
// the proxy's own ServiceAccount, as in its pod — restores the Service and
// deletes what inject made. Then chaos kube inject interrupted (SIGINT)
// heals by itself and exits 130.
func TestKubeInjectKilledLeaseRestores(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cs := p.Clientset
	before := injecttest.Backend(ctx, t, cs, "chaos-kill", "backend")
	faults := filepath.Join(t.TempDir(), "faults.yaml")
	if err := os.WriteFile(faults, []byte("- {kind: http_status, status: 503}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cli, line, _ := startKube(ctx, t, "inject", "--kubeconfig", p.Kubeconfig, "-n", "chaos-kill", "--service", "backend",
		"--faults", faults, "--lease", "3s", "--image", "vmcp-chaos/chaos:test")
	var injected KubeInjectedLine
	if err := json.Unmarshal(line, &injected); err != nil || injected.Injection != "vmcp-chaos-backend" {
		t.Fatalf("inject line %q: %v", line, err)
	}
	n, _ := inject.NamesFor("backend")
	first, err := cs.CoordinationV1().Leases("chaos-kill").Get(ctx, n.Injection, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Longer than the lease: the CLI must have renewed it meanwhile.
	time.Sleep(4 * time.Second)
	renewed, err := cs.CoordinationV1().Leases("chaos-kill").Get(ctx, n.Injection, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the Lease after 4 s of a 3 s lease: %v", err)
	}
	if !renewed.Spec.RenewTime.After(first.Spec.RenewTime.Time) {
		t.Fatalf("Lease renew time %v, not after %v: the CLI does not renew it", renewed.Spec.RenewTime, first.Spec.RenewTime)
	}
	if err := cli.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cli.Wait()

	kubeconfig := injecttest.KubeconfigFile(t, injecttest.ServiceAccountConfig(ctx, t, p, "chaos-kill", n.Injection))
	proxyCmd, ready, stderr := startKube(ctx, t, "proxy", "--kubeconfig", kubeconfig, "-n", "chaos-kill", "--service", "backend", "--listen", "127.0.0.1:0")
	var rl ProxyReadyLine
	if err := json.Unmarshal(ready, &rl); err != nil || !strings.HasPrefix(rl.URL, "http://127.0.0.1:") {
		t.Fatalf("proxy ready line %q: %v", ready, err)
	}
	if err := waitExit(proxyCmd, time.Minute); err != nil {
		t.Fatalf("chaos kube proxy after the Lease expired: %v\n%s", err, stderr())
	}
	if !strings.Contains(stderr(), "restored") {
		t.Errorf("chaos kube proxy stderr does not say it restored the Service:\n%s", stderr())
	}
	injecttest.AssertRestored(ctx, t, cs, before, n, false)

	// Interrupted, the CLI heals everything itself (its RBAC too).
	other := injecttest.Backend(ctx, t, cs, "chaos-kill", "other")
	no, _ := inject.NamesFor("other")
	cli, _, cliErr := startKube(ctx, t, "inject", "--kubeconfig", p.Kubeconfig, "-n", "chaos-kill", "--service", "other",
		"--faults", faults, "--lease", "3s", "--image", "vmcp-chaos/chaos:test")
	if err := cli.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	err = waitExit(cli, time.Minute)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Fatalf("chaos kube inject after SIGINT: %v, want exit %d\n%s", err, exitInterrupted, cliErr())
	}
	injecttest.AssertRestored(ctx, t, cs, other, no, true)
}

// TestKubeInjectUsage: missing or conflicting flags and bad faults exit 2
// with the reason, before any cluster is contacted.
func TestKubeInjectUsage(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("- {kind: explode}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"kube", "inject", "-n", "x", "--service", "y"}, "exactly one of --faults"},
		{[]string{"kube", "inject", "-n", "x", "--faults", bad}, "bad.yaml"},
		{[]string{"kube", "heal", "-n", "x"}, "--namespace and --service are required"},
	} {
		out, err := runChaos(t, c.args...)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != exitUsage || !strings.Contains(string(out), c.want) {
			t.Errorf("chaos %v: %v, output %q: want exit %d saying %q", c.args, err, out, exitUsage, c.want)
		}
	}
}

// startKube starts `chaos kube ARGS...`, waits for its first stdout line
// and returns the process, the line and its stderr so far (a function).
func startKube(ctx context.Context, t *testing.T, args ...string) (*exec.Cmd, []byte, func() string) {
	t.Helper()
	cmd := exec.Command(chaosBin, append([]string{"kube"}, args...)...)
	cmd.SysProcAttr = runtimes.ChildProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	lines := make(chan []byte, 1)
	go func() {
		r := bufio.NewReader(stdout)
		l, _ := r.ReadBytes('\n')
		lines <- l
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case l := <-lines:
		if len(l) == 0 {
			t.Fatalf("chaos kube %v printed no line:\n%s", args, stderr.String())
		}
		return cmd, l, stderr.String
	case <-ctx.Done():
	case <-time.After(time.Minute):
	}
	t.Fatalf("chaos kube %v printed no line within a minute:\n%s", args, stderr.String())
	return nil, nil, nil
}

// waitExit waits for cmd to end, at most d (then kills it).
func waitExit(cmd *exec.Cmd, d time.Duration) error {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		_ = cmd.Process.Kill()
		return errors.Join(errors.New("did not exit in time"), <-done)
	}
}

// TestExperimentInitKube: chaos experiment init --kube NS/NAME reads a
// VirtualMCPServer (toolhive's CRDs installed in a real API server) and
// writes a skeleton that chaos experiment validate accepts; a bad --kube
// is a usage error, a missing VirtualMCPServer a failure.
func TestExperimentInitKube(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{CRDDirs: []string{"../../kube/discover/testdata/toolhive"}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	injecttest.Backend(ctx, t, p.Clientset, "tools", "mcp-fetch-proxy")
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []struct{ resource, kind, name string }{{"mcpgroups", "MCPGroup", "team"}, {"mcpservers", "MCPServer", "fetch"}, {"virtualmcpservers", "VirtualMCPServer", "gw"}} {
		version, spec := "v1beta1", map[string]any{"groupRef": map[string]any{"name": "team"}, "image": "fetch:1"}
		switch o.kind {
		case "MCPGroup":
			version, spec = "v1alpha1", map[string]any{}
		case "VirtualMCPServer":
			delete(spec, "image")
		}
		obj := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "toolhive.stacklok.dev/" + version, "kind": o.kind,
			"metadata": map[string]any{"name": o.name, "namespace": "tools"}, "spec": spec}}
		gvr := schema.GroupVersionResource{Group: "toolhive.stacklok.dev", Version: version, Resource: o.resource}
		if _, err := dyn.Resource(gvr).Namespace("tools").Create(ctx, obj, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", o.kind, err)
		}
	}
	out := filepath.Join(t.TempDir(), "skeleton.yaml")
	if b, err := runChaos(t, "experiment", "init", "--kube", "tools/gw", "--kubeconfig", p.Kubeconfig, "-o", out); err != nil {
		t.Fatalf("experiment init --kube: %v\n%s", err, b)
	}
	text, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(text), "chaos kube inject -n tools --service mcp-fetch-proxy") {
		t.Fatalf("the skeleton does not name the backend's Service:\n%s", text)
	}
	if b, err := runChaos(t, "experiment", "validate", out); err != nil {
		t.Fatalf("the skeleton does not validate: %v\n%s\n%s", err, b, text)
	}
	if b, err := runChaos(t, "experiment", "init", "--kube", "gw", "-o", "-"); exitCodeOf(err) != exitUsage || !strings.Contains(string(b), "NAMESPACE/NAME") {
		t.Errorf("--kube gw: %v, want exit 2 naming NAMESPACE/NAME\n%s", err, b)
	}
	if b, err := runChaos(t, "experiment", "init", "--kube", "tools/nope", "--kubeconfig", p.Kubeconfig, "-o", "-"); exitCodeOf(err) != exitFailed || !strings.Contains(string(b), "not found") {
		t.Errorf("a missing VirtualMCPServer: %v, want exit 1 saying not found\n%s", err, b)
	}
}
