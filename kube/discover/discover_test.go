package discover_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/vmcp-chaos/vmcp-chaos/experiment"
	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/discover"
	"github.com/vmcp-chaos/vmcp-chaos/kube/injecttest"
	"github.com/vmcp-chaos/vmcp-chaos/kube/kubetest"
)

// TestDiscoverVirtualMCPServer installs toolhive's CRDs (testdata) in a
// real API server, creates a VirtualMCPServer, its MCPGroup, MCPServers in
// and out of the group and the Service of one, and discovers them into an
// experiment skeleton that parses.
func TestDiscoverVirtualMCPServer(t *testing.T) {
	p := kubetest.Start(t, controlplane.Options{CRDDirs: []string{"testdata/toolhive"}})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(p.Config)
	if err != nil {
		t.Fatal(err)
	}
	cs := p.Clientset
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tools"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	create := func(version, resource, kind, name string, spec, status map[string]any) {
		t.Helper()
		obj := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": discover.Group + "/" + version, "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "tools"}, "spec": spec}}
		r := dyn.Resource(schema.GroupVersionResource{Group: discover.Group, Version: version, Resource: resource}).Namespace("tools")
		got, err := r.Create(ctx, obj, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create %s %s: %v", kind, name, err)
		}
		if status != nil {
			got.Object["status"] = status
			if _, err := r.UpdateStatus(ctx, got, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("status of %s %s: %v", kind, name, err)
			}
		}
	}
	team := map[string]any{"name": "team"}
	create("v1alpha1", "mcpgroups", "MCPGroup", "team", map[string]any{"description": "the team's tools"},
		map[string]any{"phase": "Ready", "servers": []any{"fetch", "github", "listed-only"}})
	create("v1beta1", "mcpservers", "MCPServer", "fetch", map[string]any{"image": "fetch:1", "groupRef": team},
		map[string]any{"url": "http://mcp-fetch-proxy.tools.svc.cluster.local:8080"})
	create("v1beta1", "mcpservers", "MCPServer", "github", map[string]any{"image": "github:1", "groupRef": team}, nil)
	create("v1beta1", "mcpservers", "MCPServer", "elsewhere", map[string]any{"image": "x:1", "groupRef": map[string]any{"name": "other"}}, nil)
	create("v1beta1", "virtualmcpservers", "VirtualMCPServer", "gw", map[string]any{"groupRef": team},
		map[string]any{"phase": "Ready", "url": "http://vmcp-gw.tools.svc.cluster.local:4483/mcp"})
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "mcp-fetch-proxy", Namespace: "tools"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "fetch"}, Ports: []corev1.ServicePort{{Port: 8080}}}}
	if _, err := cs.CoreV1().Services("tools").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Discovered as a user granted only the Roles of kube/rbac/chaos-kube-role.yaml.
	user, err := discover.NewClient(injecttest.AsBoundUser(ctx, t, p, "tools", "chaos-operator", "../rbac/chaos-kube-role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	v, err := discover.Discover(ctx, user, "tools", "gw")
	if err != nil {
		t.Fatal(err)
	}
	if v.Group != "team" || v.URL != "http://vmcp-gw.tools.svc.cluster.local:4483/mcp" {
		t.Fatalf("discovered group %q url %q", v.Group, v.URL)
	}
	want := []discover.Backend{
		{Name: "fetch", Service: "mcp-fetch-proxy", Port: 8080, URL: "http://mcp-fetch-proxy.tools.svc.cluster.local:8080"},
		{Name: "github"},
		{Name: "listed-only"},
	}
	if len(v.Backends) != len(want) {
		t.Fatalf("backends %+v, want %+v", v.Backends, want)
	}
	for i := range want {
		if v.Backends[i] != want[i] {
			t.Errorf("backend %d: %+v, want %+v", i, v.Backends[i], want[i])
		}
	}
	text := discover.Skeleton(v, time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC))
	e, err := experiment.Parse([]byte(text), "skeleton.yaml", nil)
	if err != nil {
		t.Fatalf("the skeleton does not parse: %v\n%s", err, text)
	}
	if e.Deployment.Gateway != v.URL {
		t.Errorf("skeleton gateway %q, want %q", e.Deployment.Gateway, v.URL)
	}
	for _, s := range []string{"chaos kube inject -n tools --service mcp-fetch-proxy", "github: no Service tools/mcp-github-proxy yet", "MCPGroup team"} {
		if !strings.Contains(text, s) {
			t.Errorf("skeleton lacks %q:\n%s", s, text)
		}
	}

	if _, err := discover.Discover(ctx, user, "tools", "missing"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("a missing VirtualMCPServer: %v, want not found", err)
	}
}
