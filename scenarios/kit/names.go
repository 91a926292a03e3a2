package kit

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Names maps the fixture backends' tools, prompts and resources to the
// names a gateway exposes them under. Each is found by its origin marker
// (history.ParseOrigin: _meta first, then description) in the gateway's
// tools/list, prompts/list and resources/list; one not found there (a
// gateway that drops descriptions and _meta, a list that failed, a
// backend down at discovery) falls back to the target's tool name pattern
// (targets.ToolNamePatternOf) for tools and prompts, and to the fixture's
// own URI for resources. Each fallback is noted on the timeline once.
type Names struct {
	pattern   string
	distinct  bool // fixture names are backend-distinct (FixtureName)
	tools     map[[2]string]string
	prompts   map[[2]string]string
	resources map[[2]string]string
	rec       *history.Recorder
	backends  []string

	mu     sync.Mutex
	noted  map[string]bool
	issues []string
}

// NewNames builds Names from a gateway's lists: pattern is the target's
// tool name pattern, backends the topology's backend names (markers of
// other backends are ignored), rec (nil allowed) gets the notes.
func NewNames(pattern string, backends []string, tools []mcp.Tool, prompts []mcp.Prompt, resources []mcp.Resource, rec *history.Recorder) *Names {
	pattern = cmp.Or(pattern, targets.DefaultToolNamePattern)
	n := &Names{pattern: pattern, distinct: !targets.PatternPrefixesBackend(pattern), tools: map[[2]string]string{}, prompts: map[[2]string]string{}, resources: map[[2]string]string{},
		rec: rec, noted: map[string]bool{}, backends: backends}
	n.LearnTools(tools)
	for _, p := range prompts {
		n.add(n.prompts, "prompt", p.Name, p.Description, p.Meta)
	}
	for _, r := range resources {
		n.add(n.resources, "resource", r.URI, r.Description, r.Meta)
	}
	return n
}

// LearnTools adds the origin markers of tools found in other answers than
// tools/list: the optimizer's find_tool results, with the optimizer on
// the only place a gateway shows the backends' tools.
func (n *Names) LearnTools(tools []mcp.Tool) {
	for _, t := range tools {
		n.add(n.tools, "tool", t.Name, t.Description, t.Meta)
	}
}

func (n *Names) add(m map[[2]string]string, kind, exposed, description string, meta *mcp.Meta) {
	backend, name, ok := history.ParseOrigin(description, history.MetaFields(meta))
	if !ok || !slices.Contains(n.backends, backend) {
		return
	}
	key := [2]string{backend, name}
	if prev, dup := m[key]; dup && prev != exposed {
		n.issues = append(n.issues, fmt.Sprintf("%s %s/%s is exposed twice: %q and %q (using the first)", kind, backend, name, prev, exposed))
		return
	}
	m[key] = exposed
}

// Discover lists the gateway's tools, prompts and resources with c (the
// calls are recorded) and returns the Names found, noting them on env's
// timeline. A list that fails leaves its kind to the fallbacks.
func Discover(ctx context.Context, c *history.Client, env *harness.Env) *Names {
	var backends []string
	for _, b := range env.Backends() {
		backends = append(backends, b.Name())
	}
	var tools []mcp.Tool
	var prompts []mcp.Prompt
	var resources []mcp.Resource
	var failed []string
	if call := c.ListTools(ctx); call.Err == nil && call.Tools != nil {
		tools = call.Tools.Tools
	} else {
		failed = append(failed, "tools/list: "+call.Text())
	}
	if call := c.ListPrompts(ctx); call.Err == nil && call.Prompts != nil {
		prompts = call.Prompts.Prompts
	} else {
		failed = append(failed, "prompts/list: "+call.Text())
	}
	if call := c.ListResources(ctx); call.Err == nil && call.Resources != nil {
		resources = call.Resources.Resources
	} else {
		failed = append(failed, "resources/list: "+call.Text())
	}
	n := NewNames(targets.ToolNamePatternOf(env.Target()), backends, tools, prompts, resources, env.Recorder())
	n.distinct = targets.DistinctToolNamesOf(env.Target())
	env.Note("names discovered by origin marker: %s", n)
	for _, f := range append(failed, n.issues...) {
		env.Note("name discovery: %s", f)
	}
	return n
}

// String lists what was found, e.g. "tools alpha/echo=alpha_echo ...".
func (n *Names) String() string {
	var parts []string
	for _, kind := range []struct {
		name string
		m    map[[2]string]string
	}{{"tools", n.tools}, {"prompts", n.prompts}, {"resources", n.resources}} {
		var items []string
		for k, v := range kind.m {
			items = append(items, k[0]+"/"+k[1]+"="+v)
		}
		sort.Strings(items)
		parts = append(parts, fmt.Sprintf("%s [%s]", kind.name, strings.Join(items, " ")))
	}
	return strings.Join(parts, "; ")
}

// Tool is the exposed name of backend's tool (its logical name, e.g.
// "echo").
func (n *Names) Tool(backend, tool string) string { return n.lookup("tool", n.tools, backend, tool) }

// Prompt is the exposed name of backend's prompt.
func (n *Names) Prompt(backend, prompt string) string {
	return n.lookup("prompt", n.prompts, backend, prompt)
}

// Resource is the exposed URI of backend's resource, named by its fixture
// URI.
func (n *Names) Resource(backend, uri string) string {
	if v, ok := n.resources[[2]string{backend, uri}]; ok {
		return v
	}
	n.note("resource "+backend+"/"+uri, fmt.Sprintf("resource %s of %s has no origin marker in resources/list: using its own URI", uri, backend))
	return uri
}

// Found reports whether backend's tool was found by its marker (not by
// the pattern).
func (n *Names) Found(backend, tool string) bool {
	_, ok := n.marked(n.tools, backend, tool)
	return ok
}

// marked is the exposed name found by the marker of backend's name, or of
// its fixture name for the pattern (AdaptTopology renames both).
func (n *Names) marked(m map[[2]string]string, backend, name string) (string, bool) {
	if v, ok := m[[2]string{backend, name}]; ok {
		return v, true
	}
	v, ok := m[[2]string{backend, FixtureName(n.distinct, backend, name)}]
	return v, ok
}

func (n *Names) lookup(kind string, m map[[2]string]string, backend, name string) string {
	if v, ok := n.marked(m, backend, name); ok {
		return v
	}
	v := targets.ExposedName(n.pattern, backend, FixtureName(n.distinct, backend, name))
	n.note(kind+" "+backend+"/"+name, fmt.Sprintf("%s %s of %s has no origin marker in the gateway's list: by the pattern %s it is %q", kind, name, backend, n.pattern, v))
	return v
}

func (n *Names) note(key, text string) {
	n.mu.Lock()
	first := !n.noted[key]
	n.noted[key] = true
	n.mu.Unlock()
	if first && n.rec != nil {
		n.rec.Note("name discovery: %s", text)
	}
}
