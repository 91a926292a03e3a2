package experiment

import (
	"strings"
	"testing"
)

// meshStep is a chaos_mesh step appended to goodExperiment's method.
const meshStep = `  - action:
      type: chaos_mesh
      object:
        apiVersion: chaos-mesh.org/v1alpha1
        kind: PodChaos
        metadata: {name: kill-beta}
        spec: {action: pod-kill, mode: one, selector: {labelSelectors: {app: beta}}}
`

// TestParseChaosMesh: a chaos_mesh action parses with deployment.kube;
// what is wrong with one is named by file:line:field.
func TestParseChaosMesh(t *testing.T) {
	t.Parallel()
	withKube := strings.Replace(goodExperiment, "deployment:\n", "deployment:\n  kube: {namespace: mcp}\n", 1)
	e, err := Parse([]byte(withKube+meshStep), "x.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a := e.Method[4].Action; a.Type != ActionChaosMesh || a.Object["kind"] != "PodChaos" || e.Deployment.Kube.Namespace != "mcp" {
		t.Fatalf("parsed %+v, kube %+v", a, e.Deployment.Kube)
	}
	for _, c := range []struct{ name, src, want string }{
		{"no cluster", goodExperiment + meshStep, "x.yaml:20: method[4].action: a chaos_mesh action needs deployment.kube.namespace"},
		{"other kind", withKube + strings.Replace(meshStep, "PodChaos", "StressChaos", 1), "method[4].action.object.kind: StressChaos: want one of PodChaos, NetworkChaos"},
		{"other group", withKube + strings.Replace(meshStep, "chaos-mesh.org/v1alpha1", "chaos-mesh.org/v2", 1), "method[4].action.object.apiVersion: chaos-mesh.org/v2: want chaos-mesh.org/v1alpha1"},
		{"no name", withKube + strings.Replace(meshStep, "metadata: {name: kill-beta}", "metadata: {}", 1), "method[4].action.object.metadata.name: required"},
		{"no spec", withKube + strings.Replace(meshStep, "        spec: {action: pod-kill, mode: one, selector: {labelSelectors: {app: beta}}}\n", "", 1), "method[4].action.object.spec: required"},
		{"no object", withKube + "  - action: {type: chaos_mesh}\n", "method[4].action.object: required"},
		{"with a backend", withKube + strings.Replace(meshStep, "type: chaos_mesh", "type: chaos_mesh\n      backend: beta", 1), "method[4].action: chaos_mesh takes only object"},
		{"unknown field of kube", strings.Replace(withKube, "kube: {namespace: mcp}", "kube: {namespace: mcp, cluster: x}", 1) + meshStep, "deployment.kube.cluster: unknown field"},
	} {
		_, err := Parse([]byte(c.src), "x.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// TestParseKubeServices: the gateway and backends may be named by their
// Services in deployment.kube's namespace; what is wrong with them is
// named by file:line:field.
func TestParseKubeServices(t *testing.T) {
	t.Parallel()
	const base = `title: t
deployment:
  kube: {namespace: mcp, gateway: {service: vmcp-demo, port: 4483}}
  backends:
    - {name: alpha, control: "http://127.0.0.1:9001"}
    - {name: beta, service: mcp-beta-proxy}
steadyState:
  probes:
    - {name: tools, type: tools_listed, tools: [beta_echo]}
method:
  - action: {type: inject, backend: beta, faults: [{kind: http_status, status: 503}], duration: 5s}
  - action: {type: clear, backend: "*"}
`
	e, err := Parse([]byte(base), "x.yaml", nil)
	if err != nil {
		t.Fatal(err)
	}
	if g := e.Deployment.Kube.Gateway; g.Service != "vmcp-demo" || g.Port != 4483 || g.Path != "/mcp" || e.Deployment.Gateway != "" {
		t.Fatalf("gateway %+v (url %q)", g, e.Deployment.Gateway)
	}
	if b := e.Deployment.Backends[1]; b.Service != "mcp-beta-proxy" || b.Control != "" {
		t.Fatalf("backend %+v", b)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"both gateways", "deployment:\n", "deployment:\n  gateway: http://127.0.0.1:1/mcp\n", "deployment.gateway: give the gateway's URL or deployment.kube.gateway"},
		{"no gateway", ", gateway: {service: vmcp-demo, port: 4483}", "", "deployment.gateway: required: the gateway's MCP URL (or kube.gateway: its Service)"},
		{"bad service", "service: vmcp-demo", "service: Vmcp_Demo", "x.yaml:3: deployment.kube.gateway.service: \"Vmcp_Demo\": want the gateway's Service name"},
		{"bad port", "port: 4483", "port: 70000", "deployment.kube.gateway.port: 70000"},
		{"bad path", "port: 4483}", "port: 4483, path: mcp}", "deployment.kube.gateway.path: \"mcp\": want an absolute path"},
		{"no namespace", "namespace: mcp, ", "", "deployment.kube.namespace: \"\": want a namespace name"},
		{"service and control", "{name: beta, service: mcp-beta-proxy}", "{name: beta, service: mcp-beta-proxy, control: \"http://127.0.0.1:9002\"}", "x.yaml:6: deployment.backends[1].service: give control"},
		{"bad backend service", "service: mcp-beta-proxy", "service: mcp.beta", "deployment.backends[1].service: \"mcp.beta\": want a Service name"},
		{"service without kube", "  kube: {namespace: mcp, gateway: {service: vmcp-demo, port: 4483}}\n", "  gateway: http://127.0.0.1:1/mcp\n", "deployment.backends[1].service: a backend named by its Service needs deployment.kube.namespace"},
		{"token through the API server", "deployment:\n", "deployment:\n  authEnv: HOME\n", "deployment.authEnv: a gateway reached through the API server's service proxy gets no bearer token"},
	} {
		src := strings.Replace(base, c.from, c.to, 1)
		if src == base {
			t.Fatalf("%s: %q not in the file", c.name, c.from)
		}
		_, err := Parse([]byte(src), "x.yaml", nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}
