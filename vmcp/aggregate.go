package vmcp

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// backendView is what one backend offers, as listed at connection time.
type backendView struct {
	Tools     []mcp.Tool
	Resources []mcp.Resource
	Templates []mcp.ResourceTemplate
	Prompts   []mcp.Prompt
}

// route names the backend that serves an exposed capability and the name
// (or URI) the backend knows it by.
type route struct {
	Backend string
	Name    string
}

// aggregate is the merged view a client sees, with its routing tables.
// Lists are sorted (tools and prompts by exposed name, resources by URI) so
// the result never depends on map order.
type aggregate struct {
	Tools     []mcp.Tool
	Prompts   []mcp.Prompt
	Resources []mcp.Resource
	Templates []mcp.ResourceTemplate

	ToolRoutes     map[string]route // exposed name → backend, original name
	PromptRoutes   map[string]route
	ResourceRoutes map[string]route // URI → backend, URI
	TemplateRoutes map[string]route // URI template → backend, URI template

	sessOnce  sync.Once
	sessTools map[string]server.ServerTool // see Gateway.sessionTools

	listOnce sync.Once
	listJSON []byte // the tools/list result, encoded once (toolsListJSON)
}

// toolsListJSON is the result of a tools/list of this view, encoded on
// first use and shared by every session with the view: what mcp-go's
// server answers (the tools, sorted by name), without encoding the tools
// again for each request. Nil if the tools do not encode.
func (a *aggregate) toolsListJSON() []byte {
	a.listOnce.Do(func() {
		if raw, err := json.Marshal(mcp.ListToolsResult{Tools: a.Tools}); err == nil {
			a.listJSON = raw // else nil: mcp-go answers (and says what failed)
		}
	})
	return a.listJSON
}

// wins reports whether backend a wins over backend b: by position in
// order (aggregation.priorityOrder), then unlisted ones by name.
func wins(order []string, a, b string) bool {
	pa, pb := slices.Index(order, a), slices.Index(order, b)
	switch {
	case pa >= 0 && pb >= 0:
		return pa < pb
	case pa >= 0 || pb >= 0:
		return pa >= 0
	default:
		return a < b
	}
}

// prefixed renders the prefix format for backend.
func prefixed(format, backend, name string) string {
	p := strings.ReplaceAll(format, "{backend}", backend)
	p = strings.ReplaceAll(p, "{workload}", backend)
	return p + name
}

// candidate is one backend's item under its exposed name (the item
// already renamed).
type candidate[T any] struct {
	exposed string
	backend string
	orig    string
	item    T
}

// place resolves candidates that share an exposed name (the best-ranked
// backend wins) into the items, sorted by exposed name, and their routes.
func place[T any](order []string, cands []candidate[T]) ([]T, map[string]route) {
	best := map[string]candidate[T]{}
	for _, c := range cands {
		cur, ok := best[c.exposed]
		if !ok || wins(order, c.backend, cur.backend) {
			best[c.exposed] = c
		}
	}
	var items []T
	routes := make(map[string]route, len(best))
	for _, exposed := range slices.Sorted(maps.Keys(best)) {
		c := best[exposed]
		items = append(items, c.item)
		routes[exposed] = route{c.backend, c.orig}
	}
	return items, routes
}

// buildAggregate merges the views of the given backends.
func buildAggregate(a config.Aggregation, views map[string]backendView) *aggregate {
	rename := func(backend, name string) string {
		if a.ConflictResolution == config.ConflictPrefix {
			return prefixed(a.PrefixFormat, backend, name)
		}
		return name
	}
	var tools []candidate[mcp.Tool]
	var prompts []candidate[mcp.Prompt]
	var resources []candidate[mcp.Resource]
	var templates []candidate[mcp.ResourceTemplate]
	for _, b := range slices.Sorted(maps.Keys(views)) {
		v := views[b]
		for _, t := range v.Tools {
			orig := t.Name
			t.Name = rename(b, orig)
			tools = append(tools, candidate[mcp.Tool]{t.Name, b, orig, t})
		}
		for _, p := range v.Prompts {
			orig := p.Name
			p.Name = rename(b, orig)
			prompts = append(prompts, candidate[mcp.Prompt]{p.Name, b, orig, p})
		}
		for _, res := range v.Resources {
			resources = append(resources, candidate[mcp.Resource]{res.URI, b, res.URI, res})
		}
		for _, t := range v.Templates {
			key := ""
			if t.URITemplate != nil && t.URITemplate.Template != nil {
				key = t.URITemplate.Raw()
			}
			templates = append(templates, candidate[mcp.ResourceTemplate]{key, b, key, t})
		}
	}
	agg := &aggregate{}
	agg.Tools, agg.ToolRoutes = place(a.PriorityOrder, tools)
	agg.Prompts, agg.PromptRoutes = place(a.PriorityOrder, prompts)
	agg.Resources, agg.ResourceRoutes = place(a.PriorityOrder, resources)
	agg.Templates, agg.TemplateRoutes = place(a.PriorityOrder, templates)
	return agg
}
