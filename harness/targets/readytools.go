package targets

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// ToolMatch is where one backend tool shows in a gateway's tools/list.
type ToolMatch struct {
	// Backend and Tool are the backend and its own tool name.
	Backend, Tool string
	// Exposed is the gateway's name for it ("" when not found).
	Exposed string
	// By is "origin marker" or "name pattern".
	By string
}

// MatchTools finds every backend's tools (BackendInfo.Tools) in a gateway's
// tools/list: by origin marker (ParseOrigin) first, else by the tool name
// pattern (ExposedToolName). It returns one match per backend tool, in
// topology order; Exposed is empty for a tool not found.
func MatchTools(tools []mcp.Tool, backends []runtimes.BackendInfo, pattern string) []ToolMatch {
	byOrigin := map[string]string{}
	names := map[string]bool{}
	for _, t := range tools {
		names[t.Name] = true
		if b, n, ok := history.ParseOrigin(t.Description, history.MetaFields(t.Meta)); ok {
			byOrigin[b+"/"+n] = t.Name
		}
	}
	var out []ToolMatch
	for _, b := range backends {
		for _, tool := range b.Tools {
			m := ToolMatch{Backend: b.Name, Tool: tool}
			if ex, ok := byOrigin[b.Name+"/"+tool]; ok {
				m.Exposed, m.By = ex, "origin marker"
			} else if ex := ExposedName(pattern, b.Name, tool); names[ex] {
				m.Exposed, m.By = ex, "name pattern"
			}
			out = append(out, m)
		}
	}
	return out
}

// MissingTools names the backend tools a match did not find ("beta/echo").
func MissingTools(ms []ToolMatch) []string {
	var out []string
	for _, m := range ms {
		if m.Exposed == "" {
			out = append(out, m.Backend+"/"+m.Tool)
		}
	}
	return out
}

// Seen says what a tools/list showed of the backends' tools, before any
// guess about why some are missing: "the gateway listed 0 tools of alpha
// and beta (2 tools in all, none with an origin marker)", or "the gateway
// listed 1 of alpha's 1 tools and 0 of beta's 1 (3 tools in all, 1 with
// an origin marker)".
func Seen(tools []mcp.Tool, ms []ToolMatch) string {
	var order []string
	found, want := map[string]int{}, map[string]int{}
	for _, m := range ms {
		if want[m.Backend] == 0 {
			order = append(order, m.Backend)
		}
		want[m.Backend]++
		if m.Exposed != "" {
			found[m.Backend]++
		}
	}
	marked := 0
	for _, t := range tools {
		if _, _, ok := history.ParseOrigin(t.Description, history.MetaFields(t.Meta)); ok {
			marked++
		}
	}
	markers := "none with an origin marker"
	if marked > 0 {
		markers = fmt.Sprintf("%d with an origin marker", marked)
	}
	total := 0
	for _, n := range found {
		total += n
	}
	var what string
	if total == 0 {
		what = "0 tools of " + joinAnd(order)
	} else {
		parts := make([]string, len(order))
		for i, b := range order {
			parts[i] = fmt.Sprintf("%d of %s's %d", found[b], b, want[b])
		}
		what = joinAnd(parts)
	}
	return fmt.Sprintf("the gateway listed %s (%d tools in all, %s)", what, len(tools), markers)
}

// joinAnd is "a", "a and b", "a, b and c".
func joinAnd(s []string) string {
	if len(s) <= 1 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// Collisions says which missing tools share their bare name with a tool
// of another backend (a gateway that drops tools whose names collide):
// "; their names collide across backends: echo (alpha, beta)".
// No guess is made when no backend's tool was found at all (nothing
// collided: the gateway listed none of them).
func Collisions(missing []string, backends []runtimes.BackendInfo) string {
	wanted := 0
	for _, b := range backends {
		wanted += len(b.Tools)
	}
	if len(missing) >= wanted {
		return ""
	}
	owners := map[string][]string{}
	for _, b := range backends {
		for _, t := range b.Tools {
			owners[t] = append(owners[t], b.Name)
		}
	}
	var out []string
	for _, m := range missing {
		_, tool, _ := strings.Cut(m, "/")
		if o := owners[tool]; len(o) > 1 && !slices.Contains(out, tool+" ("+strings.Join(o, ", ")+")") {
			out = append(out, tool+" ("+strings.Join(o, ", ")+")")
		}
	}
	if len(out) == 0 {
		return ""
	}
	return "; their names collide across backends: " + strings.Join(out, ", ") + " (a gateway that drops colliding names needs distinctToolNames: true in its profile, or toolNames without {backend})"
}

// lastUnlessEnded is what a readiness wait last saw: now, unless the
// wait's ctx ended under it and an earlier observation says more (the
// tools a list lacked, not the deadline cutting the last list short).
func lastUnlessEnded(ctx context.Context, last, now string) string {
	if ctx.Err() != nil && last != "" {
		return last
	}
	return now
}

// freshViewAfter is how long waitTools asks one session before it opens
// another: a gateway may fix a session's view when it opens (a backend
// whose initialize failed under load stays out of that session), so
// only a new session shows a backend that came later.
const freshViewAfter = time.Second

// readyRevisions are the protocol revisions waitTools asks on, in turn
// while one fails: a gateway may refuse a revision it does not serve (a
// 2025-11-25 client refused -32022 by a gateway with its optimizer on,
// or a modern-only one), and readiness is about its tools, not about
// which revision it speaks (the revisions scenarios judge that).
var readyRevisions = []history.Revision{history.RevisionLegacy, history.RevisionModern}

// waitTools polls tools/list through the gateway at mcpURL until every
// backend's tools show (with the optimizer on, until any tool shows: the
// backends' tools hide behind find_tool), or ctx ends. It opens a new
// session once one has not shown them for freshViewAfter, and asks on
// the next of readyRevisions after a session failed to open or list.
func waitTools(ctx context.Context, mcpURL string, header map[string]string, backends []runtimes.BackendInfo, pattern string, optimizer bool) error {
	var last string
	var c *history.Client
	var opened time.Time
	rev := 0
	failed := func(what string) {
		last = lastUnlessEnded(ctx, last, fmt.Sprintf("%s (a %s client)", what, readyRevisions[rev]))
		rev = (rev + 1) % len(readyRevisions)
	}
	defer func() {
		if c != nil {
			_ = c.Close(context.Background())
		}
	}()
	for {
		if c == nil {
			var err error
			c, err = history.Dial(ctx, mcpURL, readyRevisions[rev], history.NewRecorder("ready"), history.WithCallTimeout(5*time.Second), history.WithCloseGrace(200*time.Millisecond), history.WithHeaders(header))
			if err != nil {
				c = nil
				failed(err.Error())
			}
			opened = time.Now()
		}
		if c != nil {
			call := c.ListTools(ctx)
			switch {
			case call.Err != nil:
				failed("tools/list: " + call.Err.Error())
				_ = c.Close(context.Background())
				c = nil
			case optimizer && len(call.Tools.Tools) > 0:
				return nil
			case optimizer:
				last = "tools/list is empty"
			default:
				ms := MatchTools(call.Tools.Tools, backends, pattern)
				missing := MissingTools(ms)
				if len(missing) == 0 {
					return nil
				}
				names := make([]string, len(call.Tools.Tools))
				for i, t := range call.Tools.Tools {
					names[i] = t.Name
				}
				slices.Sort(names)
				last = fmt.Sprintf("%s; it lacks %s%s (listed: %s)", Seen(call.Tools.Tools, ms), strings.Join(missing, ", "), Collisions(missing, backends), strings.Join(names, ", "))
			}
			if c != nil && time.Since(opened) >= freshViewAfter {
				_ = c.Close(context.Background())
				c = nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("every backend's tools through the gateway (by origin marker, else pattern %q): %w; last: %s",
				cmp.Or(pattern, DefaultToolNamePattern), ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
