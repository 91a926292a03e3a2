package scenarios_test

// Tool names discovered, never assumed: the catalogue judges gateways that
// name a backend's tools with another separator, put the backend after the
// tool name, or do not prefix at all. The gateways here are the reference
// behind a renaming proxy (tools/list and prompts/list answers renamed,
// tools/call and prompts/get requests renamed back), optionally dropping
// the origin markers (descriptions and _meta) so that only the target's
// tool name pattern can find the tools.

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/runner"
)

func TestScenariosJudgeOtherToolNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pattern    string
		dropMarker bool
	}{
		{"{backend}__{tool}", true}, // found by the pattern alone
		{"{tool}@{backend}", false}, // found by the origin marker
		{"{tool}", false},           // no prefix: fixture tools get distinct names
	}
	for _, tc := range cases {
		t.Run(strings.NewReplacer("{", "", "}", "").Replace(tc.pattern), func(t *testing.T) {
			target := &renamingTarget{inner: targets.Reference{TargetName: "renamed"}, pattern: tc.pattern, dropMarkers: tc.dropMarker}
			for _, name := range []string{"wrapping/modern/streamable-http", "hang-cancel/legacy/streamable-http"} {
				sc := scenario(t, name)
				cfg := runner.RunConfig{Target: target}
				rec := againIfInconclusive(t, context.Background(), sc, cfg, runScenario(context.Background(), sc, cfg))
				res := rec.Result()
				failed, judged := res.CheckCounts()
				t.Logf("%s, tools named %s: %s (%d/%d checks failed)", name, tc.pattern, res.Verdict, failed, judged)
				if res.Verdict != history.VerdictPassed {
					t.Errorf("%s against a gateway naming tools %s: %s: %s", name, tc.pattern, res.Verdict, res.Reason)
				}
				// The calls went to the renamed tools.
				want := targets.ExposedName(tc.pattern, "beta", "echo")
				if tc.pattern == "{tool}" {
					want = "echo_beta"
				}
				seen := false
				for _, c := range rec.Calls() {
					seen = seen || (c.Method == "tools/call" && c.Target == want)
				}
				if !seen {
					t.Errorf("%s: no tools/call of %q", name, want)
				}
			}
		})
	}
}

// renamingTarget is the reference behind a proxy that exposes every
// backend tool and prompt under pattern instead of the reference's
// {backend}_{tool}.
type renamingTarget struct {
	inner       targets.Reference
	pattern     string
	dropMarkers bool
}

func (r *renamingTarget) Name() string                       { return r.inner.Name() + "(" + r.pattern + ")" }
func (r *renamingTarget) Capabilities() targets.Capabilities { return r.inner.Capabilities() }
func (r *renamingTarget) ToolNamePattern() string            { return r.pattern }

func (r *renamingTarget) Start(ctx context.Context, topo targets.TopologyInfo) (targets.Gateway, error) {
	gw, err := r.inner.Start(ctx, topo)
	if err != nil {
		return nil, err
	}
	rn := &renamer{pattern: r.pattern, drop: r.dropMarkers, back: map[string]string{}}
	for _, b := range topo.Backends {
		rn.backends = append(rn.backends, b.Name)
	}
	return startProxy(ctx, gw, proxyRewrites{
		request: func(req *http.Request, body []byte) []byte {
			body, ref := rn.request(body)
			if ref != "" && req.Header.Get("Mcp-Name") != "" {
				req.Header.Set("Mcp-Name", ref) // the 2026-07-28 revision mirrors the name in a header
			}
			return body
		},
		response: rn.response,
	})
}

// renamer maps the reference's names ({backend}_{fixture name}) to the
// pattern's and back.
type renamer struct {
	pattern  string
	drop     bool
	backends []string

	mu   sync.Mutex
	back map[string]string // exposed → the reference's name
}

// exposed renames one of the reference's names; ok is false for a name
// that is no backend's (find_tool, ...).
func (rn *renamer) exposed(ref string) (string, bool) {
	for _, b := range rn.backends {
		if fixture, ok := strings.CutPrefix(ref, b+"_"); ok {
			name := targets.ExposedName(rn.pattern, b, fixture)
			rn.mu.Lock()
			rn.back[name] = ref
			rn.mu.Unlock()
			return name, true
		}
	}
	return ref, false
}

// request renames a tools/call or prompts/get request's name back,
// returning the reference's name ("" when it renamed nothing).
func (rn *renamer) request(body []byte) ([]byte, string) {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil || (m["method"] != "tools/call" && m["method"] != "prompts/get") {
		return body, ""
	}
	params, _ := m["params"].(map[string]any)
	name, _ := params["name"].(string)
	rn.mu.Lock()
	ref, ok := rn.back[name]
	rn.mu.Unlock()
	if !ok {
		return body, ""
	}
	params["name"] = ref
	out, err := json.Marshal(m)
	if err != nil {
		return body, ""
	}
	return out, ref
}

// response renames the tools and prompts of a list answer (and drops
// their markers when asked).
func (rn *renamer) response(body []byte) []byte {
	var m map[string]any
	if json.Unmarshal(body, &m) != nil {
		return body
	}
	res, ok := m["result"].(map[string]any)
	if !ok {
		return body
	}
	for _, key := range []string{"tools", "prompts", "resources"} {
		items, _ := res[key].([]any)
		for _, it := range items {
			item, _ := it.(map[string]any)
			if item == nil {
				continue
			}
			if name, ok := item["name"].(string); ok && key != "resources" {
				item["name"], _ = rn.exposed(name)
			}
			if rn.drop {
				delete(item, "_meta")
				delete(item, "description")
			}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return body
	}
	return out
}
