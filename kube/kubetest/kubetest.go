// Package kubetest gives a test a real Kubernetes control plane (see
// kube/controlplane), or skips it with the reason when none can be had,
// failing instead under VMCP_CHAOS_REQUIRE_KUBE=1 (as .ci/run sets it).
package kubetest

import (
	"bytes"
	"context"
	"os"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/kube/assets"
	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
)

// RequireEnv, set to 1, turns every skip of this package into a failure.
const RequireEnv = "VMCP_CHAOS_REQUIRE_KUBE"

// coldBuildBudget is the time a test must have left to build the control
// plane itself (a cold build is about 13 minutes on an idle 2-core
// machine; see kube/README.md).
const coldBuildBudget = 25 * time.Minute

// Assets returns the directory of the built control plane binaries,
// building them when the test's deadline leaves time for a cold build;
// otherwise it skips (fails under VMCP_CHAOS_REQUIRE_KUBE=1) naming the
// command that builds them.
func Assets(t testing.TB) string {
	t.Helper()
	root := runtimes.ModuleRoot()
	if root == "" {
		unavailable(t, "no source tree (go.mod) above the working directory: the control plane is built from kube/build")
	}
	dir, err := assets.Dir(root)
	if err != nil {
		unavailable(t, err.Error())
	}
	if assets.Built(dir) {
		return dir
	}
	ctx := context.Background()
	if deadline, ok := t.(interface{ Deadline() (time.Time, bool) }).Deadline(); ok {
		if time.Until(deadline) < coldBuildBudget {
			unavailable(t, "kube-apiserver and etcd are not built yet (%s) and a cold build (10-20 min) needs more than the %s this test has left: build them once with `go run ./kube/cmd/kube-assets` (or go test -timeout 40m)",
				dir, time.Until(deadline).Round(time.Second))
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		defer cancel()
	}
	var log bytes.Buffer
	t.Logf("building kube-apiserver and etcd into %s (once per machine; 10-20 min cold)", dir)
	if _, err := assets.Build(ctx, root, &log); err != nil {
		unavailable(t, "cannot build the control plane: %v\n%s", err, tail(log.String()))
	}
	return dir
}

// Start returns a running control plane for t, stopped when t ends.
func Start(t testing.TB, opts controlplane.Options) *controlplane.Plane {
	t.Helper()
	assets := Assets(t)
	p, err := controlplane.Start(assets, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(); err != nil {
			t.Errorf("stop the control plane: %v", err)
		}
	})
	return p
}

// unavailable skips t with the reason, or fails it under
// VMCP_CHAOS_REQUIRE_KUBE=1.
func unavailable(t testing.TB, format string, args ...any) {
	t.Helper()
	if os.Getenv(RequireEnv) == "1" {
		t.Fatalf(RequireEnv+"=1 and no Kubernetes control plane: "+format, args...)
	}
	t.Skipf("no Kubernetes control plane: "+format, args...)
}

// tail is the end of a build's output.
func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}
