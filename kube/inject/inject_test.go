package inject_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/inject"
	"github.com/vmcp-chaos/vmcp-chaos/kube/injecttest"
	"github.com/vmcp-chaos/vmcp-chaos/kube/kubetest"
)

const faults503 = `[{"kind": "http_status", "status": 503}]`

// TestInjectThenHeal injects in front of a Service of a real API server:
// the Service then selects the proxy's pods, a shadow Service selects the
// original pods on the same ports, the proxy's Deployment, RBAC and Lease
// exist, all owned by the anchor; heal removes all of it and leaves the
// Service exactly as it was (the whole object, but for the fields the API
// server changes on every write). Inject and heal run as a user granted
// only the Role of kube/rbac/chaos-kube-role.yaml.
func TestInjectThenHeal(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs := p.Clientset
	before := injecttest.Backend(ctx, t, cs, "chaos-a", "backend")
	user := injecttest.Client(t, injecttest.AsBoundUser(ctx, t, p, "chaos-a", "chaos-operator", "../rbac/chaos-kube-role.yaml"))

	inj, err := inject.Inject(ctx, user, inject.Spec{Namespace: "chaos-a", Service: "backend",
		Faults: []byte(faults503), Image: "vmcp-chaos/chaos:test", LeaseDuration: 15 * time.Second, Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := cs.CoreV1().Services("chaos-a").Get(ctx, "backend", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := cs.AppsV1().Deployments("chaos-a").Get(ctx, inj.Injection, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sel := labels.SelectorFromSet(svc.Spec.Selector); !sel.Matches(labels.Set(dep.Spec.Template.Labels)) ||
		sel.Matches(labels.Set(before.Spec.Selector)) {
		t.Fatalf("Service selector %v: want the proxy's pods (%v) and not the original pods (%v)", svc.Spec.Selector, dep.Spec.Template.Labels, before.Spec.Selector)
	}
	c := dep.Spec.Template.Spec.Containers[0]
	if c.Image != "vmcp-chaos/chaos:test" || c.Ports[0].ContainerPort != 9090 || strings.Join(c.Args, " ") != "kube proxy --namespace chaos-a --service backend" {
		t.Fatalf("proxy container: image %q port %d args %q", c.Image, c.Ports[0].ContainerPort, c.Args)
	}
	shadow, err := cs.CoreV1().Services("chaos-a").Get(ctx, inj.Shadow, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !labels.Equals(shadow.Spec.Selector, before.Spec.Selector) || shadow.Spec.Ports[0].Port != 8080 || shadow.Spec.Ports[0].TargetPort != intstr.FromInt32(9090) {
		t.Fatalf("shadow Service: selector %v ports %+v, want the original pods on 8080->9090", shadow.Spec.Selector, shadow.Spec.Ports)
	}
	if inj.Upstream != "http://vmcp-chaos-origin-backend.chaos-a.svc:8080" {
		t.Fatalf("upstream %q", inj.Upstream)
	}
	anchor, err := cs.CoreV1().ConfigMaps("chaos-a").Get(ctx, inj.Injection, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range injecttest.Owned(ctx, t, cs, "chaos-a", inj.Names) {
		if len(o.Owners) != 1 || o.Owners[0].UID != anchor.UID || o.Owners[0].Kind != "ConfigMap" {
			t.Errorf("%s: owners %+v, want the anchor ConfigMap %s (uid %s)", o.Kind, o.Owners, anchor.Name, anchor.UID)
		}
	}
	role, err := cs.RbacV1().Roles("chaos-a").Get(ctx, inj.Injection, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := jsonOf(t, role.Rules), jsonOf(t, inject.ProxyRules(inj.Names)); got != want {
		t.Fatalf("proxy Role rules %s, want %s", got, want)
	}

	if err := inject.Restore(ctx, user, "chaos-a", "backend", true); err != nil {
		t.Fatal(err)
	}
	injecttest.AssertRestored(ctx, t, cs, before, inj.Names, true)
	// Healing twice is harmless.
	if err := inject.Restore(ctx, user, "chaos-a", "backend", true); err != nil {
		t.Fatalf("second heal: %v", err)
	}
}

// TestInjectRefusesWhatItCannotProxy: a Service the proxy cannot stand in
// for is refused with the reason, and nothing is created.
func TestInjectRefusesWhatItCannotProxy(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs := p.Clientset
	ic := injecttest.Client(t, p.Config)
	injecttest.Backend(ctx, t, cs, "chaos-b", "good")
	mk := func(name string, mutate func(*corev1.Service)) {
		s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "chaos-b"},
			Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name}, Ports: []corev1.ServicePort{{Name: "mcp", Port: 8080}}}}
		mutate(s)
		if _, err := cs.CoreV1().Services("chaos-b").Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("noselector", func(s *corev1.Service) { s.Spec.Selector = nil })
	mk("twoports", func(s *corev1.Service) {
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "metrics", Port: 9100})
	})
	mk("named", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("http") })
	spec := func(svc, faults string) inject.Spec {
		return inject.Spec{Namespace: "chaos-b", Service: svc, Faults: []byte(faults), Image: "x", LeaseDuration: 5 * time.Second, Holder: "test"}
	}
	if _, err := inject.Inject(ctx, ic, spec("good", faults503)); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		spec inject.Spec
		want string
	}{
		{spec("noselector", faults503), "has no selector"},
		{spec("twoports", faults503), "has 2 ports"},
		{spec("named", faults503), `named port "http"`},
		{spec("good", faults503), "is injected already"},
		{spec("missing", faults503), "not found"},
		{spec("noselector", `[{"kind": "explode"}]`), "faults"},
		{inject.Spec{Namespace: "chaos-b", Service: "twoports", Faults: []byte(faults503), Image: "x", LeaseDuration: 1500 * time.Millisecond}, "whole seconds"},
		{spec(strings.Repeat("s", 50), faults503), "would be invalid"},
	} {
		_, err := inject.Inject(ctx, ic, c.spec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("inject %s: error %v, want one saying %q", c.spec.Service, err, c.want)
			continue
		}
		if c.spec.Service == "good" {
			continue
		}
		n, nerr := inject.NamesFor(c.spec.Service)
		if nerr != nil {
			continue
		}
		if _, err := cs.CoreV1().ConfigMaps("chaos-b").Get(ctx, n.Injection, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("inject %s was refused but left its ConfigMap (%v)", c.spec.Service, err)
		}
	}
}

// TestProxyRestoresWhenTheLeaseExpires: with nobody renewing the Lease,
// the proxy (Serve, as chaos kube proxy runs it in the pod) restores the
// Service and deletes the injection's objects but its own RBAC, which the
// garbage collector removes with the anchor gone (this control plane runs
// no garbage collector: they are left here, owned by the deleted anchor).
func TestProxyRestoresWhenTheLeaseExpires(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cs := p.Clientset
	ic := injecttest.Client(t, p.Config)
	before := injecttest.Backend(ctx, t, cs, "chaos-c", "backend")
	inj, err := inject.Inject(ctx, ic, inject.Spec{Namespace: "chaos-c", Service: "backend",
		Faults: []byte(faults503), Image: "x", LeaseDuration: 2 * time.Second, Holder: "test"})
	if err != nil {
		t.Fatal(err)
	}
	// The proxy runs as its own ServiceAccount: its Role must be enough.
	saCS := injecttest.Client(t, injecttest.ServiceAccountConfig(ctx, t, p, "chaos-c", inj.Injection))
	cfg, err := inject.LoadProxyConfig(ctx, saCS, "chaos-c", "backend")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Listen = "127.0.0.1:0"
	start := time.Now()
	if err := inject.Serve(ctx, saCS, cfg, nil, nil); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 2*time.Second {
		t.Fatalf("restored after %s, before the 2 s lease could expire", took)
	}
	injecttest.AssertRestored(ctx, t, cs, before, inj.Names, false)
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
