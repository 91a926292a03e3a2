package experiment_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/vmcp-chaos/vmcp-chaos/experiment"
	"github.com/vmcp-chaos/vmcp-chaos/kube/chaosmesh"
	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/kubetest"
)

const podChaos = `  - action:
      type: chaos_mesh
      object:
        apiVersion: chaos-mesh.org/v1alpha1
        kind: PodChaos
        metadata: {name: kill-beta}
        spec: {action: pod-kill, mode: %s, selector: {namespaces: [mesh], labelSelectors: {app: beta}}}
`

const networkChaos = `  - action:
      type: chaos_mesh
      object:
        apiVersion: chaos-mesh.org/v1alpha1
        kind: NetworkChaos
        metadata: {name: delay-beta, namespace: mesh}
        spec: {action: delay, mode: all, selector: {labelSelectors: {app: beta}}, delay: {latency: 100ms}, direction: to, duration: 30s}
`

// meshCluster is a real API server with Chaos Mesh's CRDs (minimal but
// faithful copies, kube/chaosmesh/testdata) and a namespace mesh.
func meshCluster(t *testing.T) dynamic.Interface {
	t.Helper()
	p := kubetest.Start(t, controlplane.Options{CRDDirs: []string{"../kube/chaosmesh/testdata"}})
	if _, err := p.Clientset.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "mesh"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// meshExperiment is an experiment against d acting on the namespace mesh.
func (d *deployment) meshExperiment(method string) string {
	return strings.Replace(d.experimentFile(method), "deployment:\n", "deployment:\n  kube: {namespace: mesh}\n", 1)
}

// exists reports whether the Chaos Mesh object resource/name is in mesh.
func exists(t *testing.T, dyn dynamic.Interface, resource, name string) bool {
	t.Helper()
	ok, err := found(dyn, resource, name)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func found(dyn dynamic.Interface, resource, name string) (bool, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := dyn.Resource(schema.GroupVersionResource{Group: chaosmesh.Group, Version: chaosmesh.Version, Resource: resource}).
		Namespace("mesh").Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}

// watchExists polls until both objects exist (then sets seen and calls
// then) or ctx ends.
func watchExists(ctx context.Context, dyn dynamic.Interface, seen *atomic.Bool, then func()) {
	go func() {
		for ctx.Err() == nil {
			pod, _ := found(dyn, "podchaos", "kill-beta")
			net, _ := found(dyn, "networkchaos", "delay-beta")
			if pod && net {
				seen.Store(true)
				then()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

// TestChaosMeshActionsCreateAndRollBack: an experiment's chaos_mesh
// actions create a PodChaos and a NetworkChaos that Chaos Mesh's CRDs
// accept, in the same run as the proxy faults, with one steady state and
// one journal; the rollback deletes them.
func TestChaosMeshActionsCreateAndRollBack(t *testing.T) {
	dyn := meshCluster(t)
	d := startDeployment(t)
	var seen atomic.Bool
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	watchExists(ctx, dyn, &seen, func() {})
	// The pause (before any fault, so no lease is renewed meanwhile) gives
	// the watcher, polling every 50 ms, time to see both objects.
	method := strings.ReplaceAll(podChaos, "%s", "one") + networkChaos + "  - pause: 2s\n" + faultMethod
	out, progress := run(t, t.Context(), d.meshExperiment(method), experiment.Options{Kube: chaosmesh.New(dyn)})
	if out.Status != experiment.StatusHeld {
		t.Fatalf("status %s (%s)\n%s", out.Status, out.Reason, progress)
	}
	if !seen.Load() {
		t.Fatalf("the PodChaos and the NetworkChaos were never both in the cluster during the run\n%s", progress)
	}
	if exists(t, dyn, "podchaos", "kill-beta") || exists(t, dyn, "networkchaos", "delay-beta") {
		t.Fatalf("a Chaos Mesh object outlived the rollback\n%s", progress)
	}
	for _, name := range []string{"rollback: podchaos/kill-beta -n mesh deleted", "rollback: networkchaos/delay-beta -n mesh deleted", "method[4]: the error names beta"} {
		if c := checkNamed(t, out, name); c.Verdict != "passed" {
			t.Errorf("%s: %+v", name, c)
		}
	}
	d.clean(t)
}

// TestChaosMeshObjectRefusedByTheCRD: an object Chaos Mesh's CRD refuses
// (mode "some") aborts the run with the API server's reason, and the
// objects created before it are rolled back.
func TestChaosMeshObjectRefusedByTheCRD(t *testing.T) {
	dyn := meshCluster(t)
	d := startDeployment(t)
	method := networkChaos + strings.ReplaceAll(podChaos, "%s", "some")
	out, progress := run(t, t.Context(), d.meshExperiment(method), experiment.Options{Kube: chaosmesh.New(dyn)})
	if out.Status != experiment.StatusAborted || !strings.Contains(out.Reason, `Unsupported value: "some"`) {
		t.Fatalf("status %s (%s), want aborted by the CRD's enum\n%s", out.Status, out.Reason, progress)
	}
	if exists(t, dyn, "networkchaos", "delay-beta") || exists(t, dyn, "podchaos", "kill-beta") {
		t.Fatalf("an object outlived the rollback\n%s", progress)
	}
	if out.RollbackFailed {
		t.Fatalf("rollback failed: %v", out.RollbackErrors)
	}
}

// TestChaosMeshRolledBackOnInterrupt: the interrupt (what SIGINT is to
// chaos experiment run: its context ends) during the method deletes the
// objects created.
func TestChaosMeshRolledBackOnInterrupt(t *testing.T) {
	dyn := meshCluster(t)
	d := startDeployment(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var seen atomic.Bool
	watchExists(ctx, dyn, &seen, cancel)
	method := strings.ReplaceAll(podChaos, "%s", "one") + networkChaos + "  - pause: 50s\n"
	start := time.Now()
	out, progress := run(t, ctx, d.meshExperiment(method), experiment.Options{Kube: chaosmesh.New(dyn)})
	if out.Status != experiment.StatusInterrupted || out.ExitCode() != experiment.ExitInterrupted || !seen.Load() {
		t.Fatalf("status %s (%s) after %s, seen %v\n%s", out.Status, out.Reason, time.Since(start), seen.Load(), progress)
	}
	if exists(t, dyn, "podchaos", "kill-beta") || exists(t, dyn, "networkchaos", "delay-beta") {
		t.Fatalf("a Chaos Mesh object outlived the interrupt\n%s", progress)
	}
}
