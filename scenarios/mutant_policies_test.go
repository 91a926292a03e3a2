package scenarios_test

// The behaviour mutants' policies (mutant_front_test.go): each is one
// defect a real gateway could have, small enough to read at a glance.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// isCall reports whether method calls a backend's tool, resource or
// prompt.
func isCall(method string) bool {
	return method == "tools/call" || method == "resources/read" || method == "prompts/get"
}

// isBetaCall reports whether m calls one of beta's tools, resources or
// prompts.
func isBetaCall(m rpcMsg) bool { return m.backend == "beta" && isCall(m.Method) }

// passThrough is the policy that changes nothing; the others embed it.
type passThrough struct{}

func (passThrough) before(rpcMsg) string                     { return "" }
func (passThrough) after(rpcMsg, bool, bool) time.Duration   { return 0 }
func (passThrough) backAnswer(method string, status int) int { return status }
func (passThrough) streamEnded()                             {}
func unavailable(backend, why string) string {
	return fmt.Sprintf("backend %q unavailable: %s", backend, why)
}

// slowErrors holds every failed answer to a call (of backend's tools,
// prompts and resources only, when set) back for hold: a gateway that
// reports a failure late (it retries, or waits out a timer, before giving
// up).
type slowErrors struct {
	passThrough
	hold    time.Duration
	backend string
}

func (p slowErrors) after(m rpcMsg, failed, _ bool) time.Duration {
	if !failed || !isCall(m.Method) || p.backend != "" && m.backend != p.backend {
		return 0
	}
	return p.hold
}

// stickyFailure fails a backend's next n calls after a call of it failed
// or was abandoned, naming it: a gateway slow to take a backend back.
// With perTool, only the next n calls of that tool (prompt, resource)
// fail: a gateway that holds a call's failure against what it called.
type stickyFailure struct {
	passThrough
	n       int
	perTool bool
	mu      sync.Mutex
	left    map[string]int
}

func (p *stickyFailure) key(m rpcMsg) string {
	if p.perTool {
		return m.Params.Name + m.Params.URI
	}
	return m.backend
}

func (p *stickyFailure) before(m rpcMsg) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.backend == "" || !isCall(m.Method) || p.left[p.key(m)] == 0 {
		return ""
	}
	p.left[p.key(m)]--
	return unavailable(m.backend, "still marked failed after its last failure")
}

func (p *stickyFailure) after(m rpcMsg, failed, abandoned bool) time.Duration {
	if (failed || abandoned) && m.backend != "" && isCall(m.Method) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.left == nil {
			p.left = map[string]int{}
		}
		p.left[p.key(m)] = p.n
	}
	return 0
}

// blastRadius fails the other backends' calls while beta fails (from a
// failed answer for beta to its next success) or has a call in flight: a
// gateway whose one failing backend takes the others down with it.
type blastRadius struct {
	passThrough
	mu      sync.Mutex
	failing bool
	pending int
}

func (p *blastRadius) before(m rpcMsg) string {
	if !isCall(m.Method) || m.backend == "" {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.backend == "beta" {
		p.pending++
		return ""
	}
	if p.failing || p.pending > 0 {
		return unavailable(m.backend, "held back while beta fails")
	}
	return ""
}

func (p *blastRadius) after(m rpcMsg, failed, abandoned bool) time.Duration {
	if m.backend == "beta" && isCall(m.Method) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.pending--
		if !abandoned {
			p.failing = failed
		}
	}
	return 0
}

// coldStart fails the first call of each client session to beta: a
// gateway that connects to a backend lazily and fails the call that
// triggered the connection.
type coldStart struct {
	passThrough
	mu   sync.Mutex
	seen map[string]bool
}

func (p *coldStart) before(m rpcMsg) string {
	if m.backend != "beta" || !isCall(m.Method) {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen[m.session] {
		return ""
	}
	if p.seen == nil {
		p.seen = map[string]bool{}
	}
	p.seen[m.session] = true
	return unavailable(m.backend, "connecting")
}

// swallowErrors answers a failed call to beta with an empty success: a
// gateway that hides a backend's failure from its client.
type swallowErrors struct{ passThrough }

func (swallowErrors) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	if m.backend != "beta" || !failedMessage(answer) {
		return nil
	}
	empty := map[string]string{"tools/call": "content", "resources/read": "contents", "prompts/get": "messages"}[m.Method]
	if empty == "" {
		return nil
	}
	return map[string]any{"jsonrpc": "2.0", "id": answer["id"], "result": map[string]any{empty: []any{}}}
}

// wrapToolErrors answers beta's own isError result as the gateway's error
// naming beta: a gateway that takes a tool's error for the backend
// failing.
type wrapToolErrors struct{ passThrough }

func (wrapToolErrors) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	res, _ := answer["result"].(map[string]any)
	if isError, _ := res["isError"].(bool); !isError || m.backend != "beta" {
		return nil
	}
	return map[string]any{"jsonrpc": "2.0", "id": answer["id"], "error": map[string]any{"code": -32603, "message": unavailable("beta", "tool error")}}
}

// forgetsFailedTools leaves beta's tools out of tools/list once a call of
// beta failed: a gateway that drops a failing backend from its view and
// never takes it back into the list (calls by name still work).
type forgetsFailedTools struct{ betaFailed }

// betaFailed remembers that a call of beta failed; policies that change
// for good once beta failed embed it.
type betaFailed struct {
	passThrough
	failed atomic.Bool
}

func (p *betaFailed) after(m rpcMsg, failed, _ bool) time.Duration {
	if failed && m.backend == "beta" {
		p.failed.Store(true)
	}
	return 0
}

func (p *forgetsFailedTools) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	res, _ := answer["result"].(map[string]any)
	tools, ok := res["tools"].([]any)
	if m.Method != "tools/list" || !ok || !p.failed.Load() {
		return nil
	}
	res["tools"] = slices.DeleteFunc(tools, func(t any) bool {
		name, _ := t.(map[string]any)["name"].(string)
		return addressedBackend(name, "") == "beta"
	})
	return answer
}

// refuseTool fails every call of beta's tool without forwarding it: a
// gateway that lists a tool it never calls.
type refuseTool struct {
	passThrough
	tool string
}

func (p refuseTool) before(m rpcMsg) string {
	if m.Method == "tools/call" && m.backend == "beta" && strings.HasSuffix(m.Params.Name, "_"+p.tool) {
		return unavailable("beta", "tool not served")
	}
	return ""
}

// noCancel never tells the gateway a client cancelled its call: the call
// to the gateway goes on, and notifications/cancelled is dropped.
type noCancel struct{ passThrough }

func (noCancel) detach() bool { return true }
func (noCancel) before(m rpcMsg) string {
	if m.Method == "notifications/cancelled" {
		return "dropped"
	}
	return ""
}

// busyBackend refuses a call of beta while another call of beta is in
// flight: a gateway whose backend session runs one call at a time.
type busyBackend struct {
	passThrough
	mu      sync.Mutex
	pending int
}

func (p *busyBackend) before(m rpcMsg) string {
	if !isBetaCall(m) {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pending > 0 {
		return unavailable("beta", "busy with another call")
	}
	p.pending++
	return ""
}

func (p *busyBackend) after(m rpcMsg, _, _ bool) time.Duration {
	if isBetaCall(m) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.pending--
	}
	return 0
}

// afterSessionLoss misbehaves once beta lost its backend session (it
// answered a request 404, closed a connection, or its GET stream ended:
// it restarted, or its sessions expired), by mode: "slow": the gateway is slow to take beta
// back (beta's next two calls fail; its first two 404s reach the gateway
// as 502s; the end of its SSE stream, a second late); "alpha": alpha's
// next call fails;
// "resources": beta's next resource read and prompt get fail (the gateway
// re-initialized its tools only).
type afterSessionLoss struct {
	passThrough
	mode     string
	mu       sync.Mutex
	hidden   int  // 404s answered 502 since beta last answered
	slow     int  // beta's calls still to fail
	alpha    bool // alpha's next call fails
	resource bool // beta's next resources/read fails
	prompt   bool // beta's next prompts/get fails
}

// lost notes that beta lost its session; p.mu is held.
func (p *afterSessionLoss) lost() {
	p.alpha, p.resource, p.prompt = p.mode == "alpha", p.mode == "resources", p.mode == "resources"
	if p.mode == "slow" {
		p.slow = 2
	}
}

func (p *afterSessionLoss) connectionLost() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lost()
}

func (p *afterSessionLoss) streamEnded() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lost()
	if p.mode == "slow" {
		return time.Second
	}
	return 0
}

func (p *afterSessionLoss) backAnswer(_, method string, status int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case status == 404 && method != "initialize":
		p.lost()
		if p.mode == "slow" && p.hidden < 2 {
			p.hidden++
			return 502
		}
	case status < 300:
		p.hidden = 0
	}
	return status
}

func (p *afterSessionLoss) before(m rpcMsg) string {
	if !isCall(m.Method) {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.backend == "beta" && p.slow > 0 {
		p.slow--
		return unavailable("beta", "re-initializing")
	}
	flag := map[string]*bool{"alpha": &p.alpha}[m.backend]
	if m.backend == "beta" {
		flag = map[string]*bool{"resources/read": &p.resource, "prompts/get": &p.prompt}[m.Method]
	}
	if flag == nil || !*flag {
		return ""
	}
	*flag = false
	return unavailable(m.backend, "re-initializing after beta's session loss")
}

// keepaliveGate fails beta's calls while the health API reports beta's
// keepalive disabled: a gateway that takes keepalive disabling itself for
// the backend being down.
type keepaliveGate struct {
	passThrough
	disabled atomic.Bool
}

func (p *keepaliveGate) admin(path string, body []byte) []byte {
	var doc struct {
		Backends map[string]struct {
			Keepalive struct {
				Enabled bool `json:"enabled"`
			} `json:"keepalive"`
		} `json:"backends"`
	}
	if path != "/api/backends/health" || json.Unmarshal(body, &doc) != nil {
		return body
	}
	if b, ok := doc.Backends["beta"]; ok {
		p.disabled.Store(!b.Keepalive.Enabled)
	}
	return body
}

func (p *keepaliveGate) before(m rpcMsg) string {
	if isBetaCall(m) && p.disabled.Load() {
		return unavailable("beta", "keepalive disabled")
	}
	return ""
}

// stuckHealth is a health API that reports a fixed state, whatever the
// gateway's: every backend healthy, its circuit circuit, its keepalive
// off with no failures; and a session API that reports every backend
// busy.
type stuckHealth struct {
	passThrough
	circuit string
}

func (p stuckHealth) admin(path string, body []byte) []byte {
	var doc map[string]any
	if json.Unmarshal(body, &doc) != nil {
		return body
	}
	backends, _ := doc["backends"].(map[string]any)
	for _, b := range backends {
		st, _ := b.(map[string]any)
		if st == nil {
			continue
		}
		if strings.HasPrefix(path, "/api/sessions/") {
			st["state"] = "busy"
			continue
		}
		st["status"], st["circuitState"] = "healthy", p.circuit
		st["keepalive"] = map[string]any{"enabled": false, "consecutiveFailures": 0, "sessions": 0}
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return body
	}
	return out
}

// overcountMetrics adds one to every vmcp_*_total sample of /metrics: a
// gateway whose counters do not count what happened.
type overcountMetrics struct{ passThrough }

var totalSampleRE = regexp.MustCompile(`(?m)^(vmcp_\w+_total(?:\{[^}]*\})?) ([0-9.e+-]+)$`)

func (overcountMetrics) admin(path string, body []byte) []byte {
	if path != "/metrics" {
		return body
	}
	return totalSampleRE.ReplaceAllFunc(body, func(line []byte) []byte {
		m := totalSampleRE.FindSubmatch(line)
		v, err := strconv.ParseFloat(string(m[2]), 64)
		if err != nil {
			return line
		}
		return []byte(fmt.Sprintf("%s %g", m[1], v+1))
	})
}

// takesForgedAnswer answers a call of beta that failed on beta's forged
// answer (another request's id) with that answer's text: a gateway that
// takes a wrong-id answer for the call's.
type takesForgedAnswer struct{ passThrough }

func (takesForgedAnswer) rewrite(m rpcMsg, answer map[string]any) map[string]any {
	if m.backend != "beta" || m.Method != "tools/call" || !failedMessage(answer) || !strings.Contains(m.answerText, strconv.Itoa(faults.ForgedID)) {
		return nil
	}
	return map[string]any{"jsonrpc": "2.0", "id": answer["id"], "result": map[string]any{"content": []any{map[string]any{"type": "text", "text": faults.ForgedText}}}}
}

// brokenSession fails every call of a backend in a client session once a
// call of it failed there, naming nothing: a gateway that never rebuilds
// a session's backend client (fixture h's defect); a new session works.
type brokenSession struct {
	passThrough
	mu     sync.Mutex
	broken map[[2]string]bool
}

func (p *brokenSession) before(m rpcMsg) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if m.session != "" && isCall(m.Method) && p.broken[[2]string{m.session, m.backend}] {
		return "connection closed: client is closing"
	}
	return ""
}

func (p *brokenSession) after(m rpcMsg, failed, _ bool) time.Duration {
	if failed && m.session != "" && m.backend != "" && isCall(m.Method) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.broken == nil {
			p.broken = map[[2]string]bool{}
		}
		p.broken[[2]string{m.session, m.backend}] = true
	}
	return 0
}

// endsSessionWhenAllDown ends a client session (every later call in it
// fails) once the last calls of both alpha and beta in it failed: a
// gateway that drops a session none of whose backends answers.
type endsSessionWhenAllDown struct {
	passThrough
	mu      sync.Mutex
	failing map[[2]string]bool // (session, backend) whose last call failed
	ended   map[string]bool
}

func (p *endsSessionWhenAllDown) before(m rpcMsg) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if isCall(m.Method) && p.ended[m.session] {
		return "session ended: no backend answers"
	}
	return ""
}

func (p *endsSessionWhenAllDown) after(m rpcMsg, failed, _ bool) time.Duration {
	if m.session == "" || m.backend == "" || !isCall(m.Method) {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failing == nil {
		p.failing, p.ended = map[[2]string]bool{}, map[string]bool{}
	}
	p.failing[[2]string{m.session, m.backend}] = failed
	if p.failing[[2]string{m.session, "alpha"}] && p.failing[[2]string{m.session, "beta"}] {
		p.ended[m.session] = true
	}
	return 0
}

// refuseSecondSession refuses every initialize but the first: a gateway
// that serves one client session at a time.
type refuseSecondSession struct {
	passThrough
	sessions atomic.Int32
}

func (p *refuseSecondSession) before(m rpcMsg) string {
	if m.Method == "initialize" && p.sessions.Add(1) > 1 {
		return "too many sessions"
	}
	return ""
}

// noStart is a gateway that exits as it starts.
type noStart struct{ harness.Reference }

func (noStart) Start(context.Context, harness.TopologyInfo) (harness.Gateway, error) {
	return nil, errors.New("mutant: the gateway exited at start (status 1)")
}
