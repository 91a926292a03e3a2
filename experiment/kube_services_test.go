package experiment_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/vmcp-chaos/vmcp-chaos/experiment"
	"github.com/vmcp-chaos/vmcp-chaos/kube/chaosmesh"
	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/expkube"
	"github.com/vmcp-chaos/vmcp-chaos/kube/inject"
	"github.com/vmcp-chaos/vmcp-chaos/kube/injecttest"
	"github.com/vmcp-chaos/vmcp-chaos/kube/kubetest"
)

// kubeTarget is a real API server holding what a Kubernetes experiment
// names: the gateway's Service "gw" (routed by the API server's service
// proxy to the in-process reference gateway), the backend Service "beta"
// to inject (its pods never run here), and Chaos Mesh's CRDs.
type kubeTarget struct {
	d      *deployment
	cs     kubernetes.Interface
	opts   experiment.Options
	beta   *corev1.Service
	names  inject.Names
	dyn    dynamic.Interface
	client experiment.KubeServices
}

func startKubeTarget(t *testing.T) *kubeTarget {
	t.Helper()
	p := kubetest.Start(t, controlplane.Options{CRDDirs: []string{"../kube/chaosmesh/testdata"}})
	k := &kubeTarget{d: startDeployment(t), cs: p.Clientset}
	k.beta = injecttest.Backend(t.Context(), t, p.Clientset, "mesh", "beta")
	injecttest.ServiceTo(t.Context(), t, p.Clientset, "mesh", "gw", strings.TrimSuffix(strings.TrimPrefix(k.d.gateway, "http://"), "/mcp"))
	var err error
	if k.names, err = inject.NamesFor("beta"); err != nil {
		t.Fatal(err)
	}
	if k.dyn, err = dynamic.NewForConfig(p.Config); err != nil {
		t.Fatal(err)
	}
	// The run acts as a user granted only the Roles of
	// kube/rbac/chaos-kube-role.yaml.
	user := injecttest.AsBoundUser(t.Context(), t, p, "mesh", "chaos-operator", "../kube/rbac/chaos-kube-role.yaml")
	svcs, err := expkube.New(user, "example.invalid/chaos:test")
	if err != nil {
		t.Fatal(err)
	}
	userDyn, err := dynamic.NewForConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	k.client = svcs
	k.opts = experiment.Options{Kube: chaosmesh.New(userDyn), Services: svcs}
	return k
}

// file is an experiment naming the gateway and beta by their Services
// (alpha keeps its local proxy's control API); method is its method.
func (k *kubeTarget) file(method string) string {
	return fmt.Sprintf(`title: beta behind the fault proxy in the cluster
deployment:
  kube: {namespace: mesh, gateway: {service: gw, port: 80}}
  backends:
    - {name: alpha, control: %q}
    - {name: beta, service: beta}
safeguards: {leaseTTL: 3s, callTimeout: 5s, maxDuration: 2m}
steadyState:
  probes:
    - {name: tools listed, type: tools_listed, tools: [alpha_echo, beta_echo], tolerance: {eventually: 20s}}
    - {name: echo answers, type: call_tool, tool: beta_echo, arguments: {text: hi}, expect: {contains: hi}}
method:
%s`, k.d.proxies["alpha"].AdminURL(), method)
}

// betaFaults is the inject step on beta (the Service).
const betaFaults = `  - action:
      type: inject
      backend: beta
      faults: [{kind: http_status, status: 503, match: {method: tools/call}}]
`

// alphaFaults, on alpha's local proxy, shows the gateway is probed through
// the API server: the error names alpha.
const alphaFaults = `  - action:
      type: inject
      backend: alpha
      faults: [{kind: http_status, status: 503, match: {method: tools/call, tool: echo}}]
  - probe: {name: the error names alpha, type: call_tool, tool: alpha_echo, expect: {names: alpha, within: 3s}}
  - action: {type: clear, backend: alpha}
`

// injectionSeen is what a watcher saw of beta's injection during a run.
type injectionSeen struct {
	mu       sync.Mutex
	switched bool   // the Service selected the proxy's pods
	faults   string // the anchor's faults
	owned    int    // objects owned by the anchor
	renews   map[string]bool
	mesh     bool // the PodChaos existed meanwhile
}

// watch polls the cluster until ctx ends, then calls then (once) when
// the injection is whole and the Lease was renewed at least once.
func (k *kubeTarget) watch(ctx context.Context, s *injectionSeen, then func()) {
	go func() {
		for ctx.Err() == nil {
			k.look(ctx, s)
			s.mu.Lock()
			done := s.switched && s.owned == 6 && len(s.renews) >= 2 && s.mesh
			s.mu.Unlock()
			if done {
				then()
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
}

func (k *kubeTarget) look(ctx context.Context, s *injectionSeen) {
	get := metav1.GetOptions{}
	svc, err := k.cs.CoreV1().Services("mesh").Get(ctx, "beta", get)
	switched := err == nil && svc.Spec.Selector[inject.LabelInjection] == k.names.Injection && len(svc.Spec.Selector) == 1
	anchor, aErr := k.cs.CoreV1().ConfigMaps("mesh").Get(ctx, k.names.Injection, get)
	owned := 0
	if aErr == nil {
		for _, o := range []metav1.Object{
			must(k.cs.CoordinationV1().Leases("mesh").Get(ctx, k.names.Injection, get)),
			must(k.cs.CoreV1().Services("mesh").Get(ctx, k.names.Shadow, get)),
			must(k.cs.CoreV1().ServiceAccounts("mesh").Get(ctx, k.names.Injection, get)),
			must(k.cs.RbacV1().Roles("mesh").Get(ctx, k.names.Injection, get)),
			must(k.cs.RbacV1().RoleBindings("mesh").Get(ctx, k.names.Injection, get)),
			must(k.cs.AppsV1().Deployments("mesh").Get(ctx, k.names.Injection, get)),
		} {
			if o != nil && len(o.GetOwnerReferences()) == 1 && o.GetOwnerReferences()[0].UID == anchor.UID {
				owned++
			}
		}
	}
	lease, lErr := k.cs.CoordinationV1().Leases("mesh").Get(ctx, k.names.Injection, get)
	mesh, _ := found(k.dyn, "podchaos", "kill-beta")
	s.mu.Lock()
	defer s.mu.Unlock()
	s.switched = s.switched || switched
	if aErr == nil {
		s.faults = anchor.Data["faults.yaml"]
	}
	s.owned = max(s.owned, owned)
	if lErr == nil && lease.Spec.RenewTime != nil {
		if s.renews == nil {
			s.renews = map[string]bool{}
		}
		s.renews[lease.Spec.RenewTime.String()] = true
	}
	s.mesh = s.mesh || mesh
}

// must is o, or nil when it could not be read.
func must[T metav1.Object](o T, err error) metav1.Object {
	if err != nil {
		return nil
	}
	return o
}

// TestKubeExperimentInjectsAServiceAndHeals: an experiment that names the
// gateway and a backend by their Services, run as a user bound to the
// Roles of kube/rbac/chaos-kube-role.yaml only, probes the gateway through the
// API server's service proxy (real MCP traffic: a fault on alpha's local
// proxy is named in the answer), puts the fault proxy in front of beta's
// Service with the inject step's faults (objects owned by the anchor, the
// Lease renewed by the run), creates a PodChaos beside it, all under one
// steady state and one journal; the rollback heals the Service back to
// exactly the object it was and deletes the PodChaos.
func TestKubeExperimentInjectsAServiceAndHeals(t *testing.T) {
	k := startKubeTarget(t)
	var seen injectionSeen
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	k.watch(ctx, &seen, func() {})
	// The pause lets the run renew the Lease (every second) and the
	// watcher see it. It comes before alpha's fault: the runner goes on
	// renewing a proxy's lease after a clear, so a pause after one aborts
	// the run as "lease lost" (a known runner bug, not this test's).
	method := betaFaults + strings.ReplaceAll(podChaos, "%s", "one") + "  - pause: 4s\n" + alphaFaults
	out, progress := run(t, t.Context(), k.file(method), k.opts)
	if out.Status != experiment.StatusHeld || out.RollbackFailed {
		t.Fatalf("status %s (%s), rollback errors %v\n%s", out.Status, out.Reason, out.RollbackErrors, progress)
	}
	seen.mu.Lock()
	defer seen.mu.Unlock()
	if !seen.switched || seen.owned != 6 || len(seen.renews) < 2 || !seen.mesh {
		t.Fatalf("during the run: Service switched %v, objects owned by the anchor %d/6, Lease renew times seen %d (want ≥ 2), PodChaos %v\n%s",
			seen.switched, seen.owned, len(seen.renews), seen.mesh, progress)
	}
	if !strings.Contains(seen.faults, `"status":503`) {
		t.Errorf("the anchor's faults %q are not the inject step's", seen.faults)
	}
	injecttest.AssertRestored(t.Context(), t, k.cs, k.beta, k.names, true)
	if exists(t, k.dyn, "podchaos", "kill-beta") {
		t.Errorf("the PodChaos outlived the rollback")
	}
	for _, name := range []string{"preflight: gateway", "preflight: service beta", "method[4]: the error names alpha", "rollback: beta healed", "rollback: podchaos/kill-beta -n mesh deleted"} {
		if c := checkNamed(t, out, name); c.Verdict != "passed" {
			t.Errorf("%s: %+v", name, c)
		}
	}
	if target := out.Results.Target; !strings.Contains(target, "/api/v1/namespaces/mesh/services/gw:80/proxy/mcp") {
		t.Errorf("journal target %q: want the gateway's Service through the API server", target)
	}
	k.d.clean(t)
}

// TestKubeExperimentInterruptHeals: the interrupt (chaos experiment run's
// context ending, as on SIGINT) while beta's Service is injected and a
// PodChaos exists heals the Service to exactly what it was and deletes
// the PodChaos; a Service injected before the run is refused before any
// fault.
func TestKubeExperimentInterruptHeals(t *testing.T) {
	k := startKubeTarget(t)
	var seen injectionSeen
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	k.watch(ctx, &seen, cancel)
	method := betaFaults + strings.ReplaceAll(podChaos, "%s", "one") + "  - pause: 90s\n"
	start := time.Now()
	out, progress := run(t, ctx, k.file(method), k.opts)
	if out.Status != experiment.StatusInterrupted || out.ExitCode() != experiment.ExitInterrupted || out.RollbackFailed {
		t.Fatalf("status %s (%s) after %s, rollback errors %v\n%s", out.Status, out.Reason, time.Since(start), out.RollbackErrors, progress)
	}
	injecttest.AssertRestored(t.Context(), t, k.cs, k.beta, k.names, true)
	if exists(t, k.dyn, "podchaos", "kill-beta") {
		t.Errorf("the PodChaos outlived the interrupt")
	}

	// Injected by someone else before the run: refused, left alone.
	if err := k.client.Inject(t.Context(), "mesh", "beta", []byte(`[{"kind":"http_status","status":503}]`), 30*time.Second); err != nil {
		t.Fatal(err)
	}
	out, progress = run(t, t.Context(), k.file(betaFaults), k.opts)
	if out.Status != experiment.StatusAborted || !strings.Contains(out.Reason, "injected already") {
		t.Fatalf("status %s (%s), want aborted before any fault: beta is injected already\n%s", out.Status, out.Reason, progress)
	}
	if injected, err := k.client.Injected(t.Context(), "mesh", "beta"); err != nil || !injected {
		t.Fatalf("the run took out an injection it did not make: injected %v, %v", injected, err)
	}
}
