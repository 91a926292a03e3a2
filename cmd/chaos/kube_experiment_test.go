package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/kube/chaosmesh"
	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/inject"
	"github.com/vmcp-chaos/vmcp-chaos/kube/injecttest"
	"github.com/vmcp-chaos/vmcp-chaos/kube/kubetest"
)

// TestKubeExperimentSIGINTHeals sends a real SIGINT to `chaos experiment
// run` (the built binary) while it holds a PodChaos and a NetworkChaos
// and has the fault proxy in front of beta's Service, in a real API
// server: it deletes both Chaos Mesh objects, restores the Service to
// exactly what it was, writes a journal marked interrupted and exits 130.
// The experiment names the gateway by its Service (probed through the API
// server's service proxy) and beta by its Service.
func TestKubeExperimentSIGINTHeals(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{CRDDirs: []string{"../../kube/chaosmesh/testdata"}})
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	cs := p.Clientset
	d := startE2E(t, "")
	before := injecttest.Backend(ctx, t, cs, "mesh", "beta")
	gw, err := url.Parse(d.gateway)
	if err != nil {
		t.Fatal(err)
	}
	injecttest.ServiceTo(ctx, t, cs, "mesh", "gw", gw.Host)
	file := filepath.Join(t.TempDir(), "kube.yaml")
	src := fmt.Sprintf(`title: beta behind the fault proxy in the cluster, with pod and network chaos
deployment:
  kube: {namespace: mesh, kubeconfig: %q, gateway: {service: gw, port: 80}, image: example.invalid/chaos:test}
  backends:
    - {name: alpha, control: %q}
    - {name: beta, service: beta}
safeguards: {leaseTTL: 3s, callTimeout: 5s, maxDuration: 3m}
steadyState:
  probes:
    - {name: tools listed, type: tools_listed, tools: [alpha_echo, beta_echo], tolerance: {eventually: 20s}}
method:
  - action: {type: inject, backend: beta, faults: [{kind: http_status, status: 503}]}
  - action:
      type: chaos_mesh
      object: {apiVersion: chaos-mesh.org/v1alpha1, kind: PodChaos, metadata: {name: kill-beta}, spec: {action: pod-kill, mode: one, selector: {labelSelectors: {app: beta}}}}
  - action:
      type: chaos_mesh
      object: {apiVersion: chaos-mesh.org/v1alpha1, kind: NetworkChaos, metadata: {name: delay-beta}, spec: {action: delay, mode: all, selector: {labelSelectors: {app: beta}}, delay: {latency: 100ms}, direction: to}}
  - pause: 2m
`, p.Kubeconfig, d.proxies["alpha"].Admin)
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	meshObject := func(resource, name string) bool {
		gctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := dyn.Resource(schema.GroupVersionResource{Group: chaosmesh.Group, Version: chaosmesh.Version, Resource: resource}).
			Namespace("mesh").Get(gctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	n, _ := inject.NamesFor("beta")
	cmd, stderr, journal := startExperiment(t, file)
	testwait.For(t, 2*time.Minute, "beta's Service switched to the proxy and both Chaos Mesh objects created", func() bool {
		svc, err := cs.CoreV1().Services("mesh").Get(ctx, "beta", metav1.GetOptions{})
		return err == nil && svc.Annotations[inject.AnnotationInjected] == n.Injection &&
			meshObject("podchaos", "kill-beta") && meshObject("networkchaos", "delay-beta")
	})
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := waitExperiment(t, cmd, stderr, journal, time.Minute)
	if r.code != exitInterrupted {
		t.Fatalf("exit %d, want %d:\n%s", r.code, exitInterrupted, r.stderr)
	}
	if r.journal == nil || !r.journal.Interrupted {
		t.Fatalf("journal not marked interrupted: %+v\n%s", r.journal, r.stderr)
	}
	if meshObject("podchaos", "kill-beta") || meshObject("networkchaos", "delay-beta") {
		t.Errorf("a Chaos Mesh object outlived SIGINT:\n%s", r.stderr)
	}
	injecttest.AssertRestored(ctx, t, cs, before, n, true)
}
