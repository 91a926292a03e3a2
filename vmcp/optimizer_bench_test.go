package vmcp_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp"
)

// benchTools generates n distinct tools in the style of real MCP servers:
// service × action × object, a templated description and 2–4 described
// parameters.
func benchTools(n int) []fakebackends.ToolSpec {
	services := []string{"github", "gitlab", "jira", "linear", "slack", "teams", "zoom", "gmail", "calendar", "drive",
		"sheets", "notion", "confluence", "postgres", "mysql", "redis", "k8s", "docker", "aws", "gcp",
		"azure", "datadog", "grafana", "pagerduty", "sentry", "stripe", "salesforce", "hubspot", "zendesk", "twilio"}
	actions := []string{"create", "get", "list", "update", "delete", "search", "archive", "export", "import", "share",
		"assign", "close", "reopen", "comment_on", "tag", "move", "copy", "lock", "restore", "summarize"}
	objects := []string{"issue", "pull_request", "branch", "channel", "message", "meeting", "email", "event", "file", "folder",
		"table", "row", "pod", "deployment", "container", "bucket", "alert", "dashboard", "incident", "invoice",
		"customer", "ticket", "lead", "contact", "report"}
	out := make([]fakebackends.ToolSpec, 0, n)
	for i := 0; len(out) < n; i++ {
		svc := services[i%len(services)]
		act := actions[(i/len(services))%len(actions)]
		obj := objects[(i/(len(services)*len(actions)))%len(objects)]
		round := i / (len(services) * len(actions) * len(objects))
		name := fmt.Sprintf("%s_%s_%s", svc, act, obj)
		if round > 0 {
			name = fmt.Sprintf("%s_v%d", name, round+1)
		}
		props := map[string]any{
			"id":      map[string]any{"type": "string", "description": fmt.Sprintf("Identifier of the %s in %s", obj, svc)},
			"project": map[string]any{"type": "string", "description": fmt.Sprintf("The %s project or workspace", svc)},
		}
		if i%2 == 0 {
			props["limit"] = map[string]any{"type": "integer", "description": "Maximum number of results to return"}
		}
		if i%3 == 0 {
			props["note"] = map[string]any{"type": "string", "description": "Free-text note attached to the operation"}
		}
		out = append(out, fakebackends.ToolSpec{
			Name: name,
			Description: fmt.Sprintf("%s a %s in %s. Use this tool when the user asks to %s a %s; it returns the %s as JSON.",
				act, obj, svc, act, obj, obj),
			Input:  map[string]any{"type": "object", "properties": props, "required": []any{"id"}},
			Result: fakebackends.ToolResult{Text: "ok from " + name},
		})
	}
	return out
}

// benchGateway starts a fake backend serving tools and a gateway with the
// optimizer in front of it, both stopped when b ends.
func benchGateway(b *testing.B, tools []fakebackends.ToolSpec) *vmcp.Gateway {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fb, err := fakebackends.Start(ctx, &fakebackends.Script{Name: "big", Protocol: fakebackends.ProtocolLegacy, Tools: tools})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = fb.Close() })
	cfg, err := vmcp.ParseConfig([]byte(gwConfig("optimizer: {enabled: true}\ntimeouts: {initialize: 30s, call: 10s, list: 30s}\n", fb)), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	g, err := vmcp.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if err := g.Start(ctx, "127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = g.Shutdown(ctx)
	})
	return g
}

var benchFindQueries = []string{
	"create a new issue in the github project",
	"list the pods of the cluster",
	"export the invoices of a customer",
	"archive an old slack channel",
	"who is assigned to this incident in pagerduty",
	"search the sentry alerts",
	"share a file from drive",
	"summarize the report in notion",
}

// BenchmarkOptimizerFindTool10k measures find_tool end to end (MCP over
// HTTP to the gateway, BM25 over the session's 10,000 tools, JSON result)
// for a legacy session and a stateless client. The first session's
// initialize (backend initialize, tools/list of 10,000 tools, index build)
// is reported as first-session-ms.
func BenchmarkOptimizerFindTool10k(b *testing.B) {
	tools := benchTools(10000)
	for _, rev := range revisions {
		b.Run(rev.name, func(b *testing.B) {
			g := benchGateway(b, tools) // a fresh gateway per run: the first session builds the index
			start := time.Now()
			c, err := tryConnect(g.URL(), rev.modern)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			// A stateless client's pool and index are built on its first
			// request: make one before measuring.
			if fr, err := findRaw(c, benchFindQueries[0]); err != nil || len(fr.Tools) != 8 {
				b.Fatalf("first find_tool: %d tools, %v", len(fr.Tools), err)
			}
			first := time.Since(start)
			i := 0
			for b.Loop() {
				fr, err := findRaw(c, benchFindQueries[i%len(benchFindQueries)])
				if err != nil || len(fr.Tools) == 0 {
					b.Fatalf("find_tool: %d tools, %v", len(fr.Tools), err)
				}
				i++
			}
			b.ReportMetric(float64(first.Microseconds())/1000, "first-session-ms")
		})
	}
}

// BenchmarkOptimizerNewSession10k measures opening a legacy session (and
// closing it) while another session keeps the backend's 10,000 tools
// indexed: backend initialize, tools/list of 10,000 tools, fingerprinting
// them, sharing the indexed segment (no build).
func BenchmarkOptimizerNewSession10k(b *testing.B) {
	g := benchGateway(b, benchTools(10000))
	holder, err := tryConnect(g.URL(), false)
	if err != nil {
		b.Fatal(err)
	}
	defer holder.Close()
	var c *client.Client
	for b.Loop() {
		var err error
		if c, err = tryConnect(g.URL(), false); err != nil {
			b.Fatal(err)
		}
		_ = c.Close()
	}
}
