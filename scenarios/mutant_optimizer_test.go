package scenarios_test

// The optimizer's mutants (mutant_front_test.go policies): each misbehaves
// in find_tool, call_tool, tools/list, initialize or the health API, one
// way each.

import (
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// rewriteFind applies edit to a find_tool result's JSON document (its
// first text content); it returns the rewritten answer, or nil when m is
// no find_tool call or edit changed nothing.
func rewriteFind(m rpcMsg, answer map[string]any, edit func(doc map[string]any) bool) map[string]any {
	res, _ := answer["result"].(map[string]any)
	content, _ := res["content"].([]any)
	if m.Method != "tools/call" || m.Params.Name != "find_tool" || len(content) == 0 {
		return nil
	}
	first, _ := content[0].(map[string]any)
	text, _ := first["text"].(string)
	var doc map[string]any
	if json.Unmarshal([]byte(text), &doc) != nil || !edit(doc) {
		return nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil
	}
	first["text"] = string(out)
	return answer
}

// foundTools is a find_tool document's tools.
func foundTools(doc map[string]any) []any {
	tools, _ := doc["tools"].([]any)
	return tools
}

// findsBeta adds beta's echo to every find_tool result that lacks it: an
// optimizer that offers a backend whatever its health.
type findsBeta struct{ passThrough }

func (findsBeta) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	return rewriteFind(m, answer, func(doc map[string]any) bool {
		tools := foundTools(doc)
		if slices.ContainsFunc(tools, func(t any) bool { return t.(map[string]any)["name"] == "beta_echo" }) {
			return false
		}
		doc["tools"] = append(tools, map[string]any{"name": "beta_echo", "description": "Echo the arguments of beta", "inputSchema": map[string]any{"type": "object"}})
		return true
	})
}

// forgetsBeta leaves beta's tools out of find_tool once a call of beta
// failed: an optimizer that never takes a recovered backend back.
type forgetsBeta struct{ betaFailed }

func (p *forgetsBeta) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	if !p.failed.Load() {
		return nil
	}
	return rewriteFind(m, answer, func(doc map[string]any) bool {
		tools := foundTools(doc)
		kept := slices.DeleteFunc(slices.Clone(tools), func(t any) bool {
			name, _ := t.(map[string]any)["name"].(string)
			return addressedBackend(name, "") == "beta"
		})
		doc["tools"] = kept
		return len(kept) != len(tools)
	})
}

// noTokenMetrics drops find_tool's token metrics.
type noTokenMetrics struct{ passThrough }

func (noTokenMetrics) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	return rewriteFind(m, answer, func(doc map[string]any) bool {
		_, had := doc["token_metrics"]
		delete(doc, "token_metrics")
		return had
	})
}

// listsBackendTools lists alpha's echo beside the optimizer's find_tool
// and call_tool: an optimizer that leaks the backends' tools into
// tools/list.
type listsBackendTools struct{ passThrough }

func (listsBackendTools) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	res, _ := answer["result"].(map[string]any)
	tools, ok := res["tools"].([]any)
	if m.Method != "tools/list" || !ok {
		return nil
	}
	res["tools"] = append(tools, map[string]any{"name": "alpha_echo", "inputSchema": map[string]any{"type": "object"}})
	return answer
}

// anonymousCallTool words every failed call_tool answer "call failed":
// neither the tool nor the backend is named.
type anonymousCallTool struct{ passThrough }

func (anonymousCallTool) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	if m.Params.Name != "call_tool" || !failedMessage(answer) {
		return nil
	}
	return map[string]any{"jsonrpc": "2.0", "id": answer["id"], "error": map[string]any{"code": -32603, "message": "call failed"}}
}

// refuseViaCallTool fails call_tool of backend's tools without calling
// them: an optimizer that cannot route to one backend.
type refuseViaCallTool struct {
	passThrough
	backend string
}

func (p refuseViaCallTool) before(m rpcMsg) string {
	if m.Params.Name == "call_tool" && m.backend == p.backend {
		return unavailable(p.backend, "not routed")
	}
	return ""
}

// staleExclusion fails every call_tool of beta's tools once beta's circuit
// refused one: an optimizer whose exclusion of a backend outlives the
// open circuit.
type staleExclusion struct {
	passThrough
	excluded atomic.Bool
}

func (p *staleExclusion) before(m rpcMsg) string {
	if m.Params.Name == "call_tool" && m.backend == "beta" && p.excluded.Load() {
		return unavailable("beta", "excluded")
	}
	return ""
}

func (p *staleExclusion) after(m rpcMsg, failed, _ bool) time.Duration {
	if failed && m.Params.Name == "call_tool" && m.backend == "beta" && strings.Contains(strings.ToLower(m.answerText), "circuit") {
		p.excluded.Store(true)
	}
	return 0
}

// findFailsAfterAlpha fails find_tool once a call of alpha failed: an
// optimizer that stops answering when a backend goes down.
type findFailsAfterAlpha struct {
	passThrough
	failed atomic.Bool
}

func (p *findFailsAfterAlpha) before(m rpcMsg) string {
	if m.Params.Name == "find_tool" && p.failed.Load() {
		return "find_tool: a backend is down"
	}
	return ""
}

func (p *findFailsAfterAlpha) after(m rpcMsg, failed, _ bool) time.Duration {
	if failed && m.backend == "alpha" {
		p.failed.Store(true)
	}
	return 0
}

// healthRewrite rewrites each backend's entry of the health API with
// edit: a health API that does not report what the gateway does.
type healthRewrite struct {
	passThrough
	edit func(backend string, st map[string]any)
}

func (p healthRewrite) admin(path string, body []byte) []byte {
	var doc map[string]any
	if path != "/api/backends/health" || json.Unmarshal(body, &doc) != nil {
		return body
	}
	backends, _ := doc["backends"].(map[string]any)
	for name, b := range backends {
		if st, ok := b.(map[string]any); ok {
			p.edit(name, st)
		}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
}

// stuckOnceOpen is a health API that reports beta's circuit open forever
// once it was open.
func stuckOnceOpen() frontPolicy {
	var opened atomic.Bool
	return healthRewrite{edit: func(backend string, st map[string]any) {
		if backend != "beta" {
			return
		}
		if st["circuitState"] == "open" {
			opened.Store(true)
		}
		if opened.Load() {
			st["circuitState"] = "open"
		}
	}}
}

// stuckOnceDown is a health API that reports beta unhealthy forever once
// it was reported unhealthy (issue 41: the health API tells the truth).
func stuckOnceDown() frontPolicy {
	var down atomic.Bool
	return healthRewrite{edit: func(backend string, st map[string]any) {
		if backend != "beta" {
			return
		}
		if st["status"] == "unhealthy" {
			down.Store(true)
		}
		if down.Load() {
			st["status"] = "unhealthy"
		}
	}}
}

// neverUnhealthy is a health API that reports an unhealthy backend
// degraded.
func neverUnhealthy() frontPolicy {
	return healthRewrite{edit: func(_ string, st map[string]any) {
		if st["status"] == "unhealthy" {
			st["status"] = "degraded"
		}
	}}
}

// slowInitialize answers initialize hold late once the health API
// reported every backend unhealthy, until it reports one healthy again: a
// gateway that waits on its backends before it opens a session. (Until
// healthy, not until "not every one unhealthy": under .ci/load a health
// document read between the scenario's and the session's open, a backend
// in another state for a moment, let the session open at once.)
type slowInitialize struct {
	passThrough
	hold    time.Duration
	allDown atomic.Bool
}

func (p *slowInitialize) admin(path string, body []byte) []byte {
	var doc struct {
		Backends map[string]struct {
			Status string `json:"status"`
		} `json:"backends"`
	}
	if path == "/api/backends/health" && json.Unmarshal(body, &doc) == nil && len(doc.Backends) > 0 {
		down, healthy := true, false
		for _, b := range doc.Backends {
			down = down && b.Status == "unhealthy"
			healthy = healthy || b.Status == "healthy"
		}
		if down {
			p.allDown.Store(true)
		} else if healthy {
			p.allDown.Store(false)
		}
	}
	return body
}

func (p *slowInitialize) after(m rpcMsg, _, _ bool) time.Duration {
	if m.Method == "initialize" && p.allDown.Load() {
		return p.hold
	}
	return 0
}
