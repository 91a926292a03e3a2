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
