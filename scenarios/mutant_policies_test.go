package scenarios_test

// The behaviour mutants' policies (mutant_front_test.go): each is one
// defect a real gateway could have, small enough to read at a glance.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
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

func (passThrough) before(rpcMsg) string                   { return "" }
func (passThrough) after(rpcMsg, bool, bool) time.Duration { return 0 }
func (passThrough) backAnswer(_, _ string, status int) int { return status }
func (passThrough) streamEnded() time.Duration             { return 0 }
func (passThrough) connectionLost()                        {}
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

// queueBackend forwards beta's calls one at a time: a call of beta waits
// in the gateway until the one before it was answered, as a gateway
// whose client of a backend queues its requests does (issue 41: beta's
// log showed the second call arriving only when the stalled one ended).
type queueBackend struct {
	passThrough
	turn chan struct{} // holds a token while a call of beta is in flight
}

func (p *queueBackend) before(m rpcMsg) string {
	if isBetaCall(m) {
		p.turn <- struct{}{}
	}
	return ""
}

func (p *queueBackend) after(m rpcMsg, _, _ bool) time.Duration {
	if isBetaCall(m) {
		<-p.turn
	}
	return 0
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

// holdBehind forwards every call of beta at once but holds each answer
// until the answers of the calls of beta sent before it have gone out:
// head-of-line blocking on the way back only. beta's log shows the calls
// side by side; an echo sent beside a stalled call comes back only after
// the stalled call's answer.
type holdBehind struct {
	passThrough
	mu    sync.Mutex
	last  chan struct{}               // closed when the latest call's answer went out
	turns map[string][2]chan struct{} // per call: the answer before it, its own
}

func (p *holdBehind) before(m rpcMsg) string {
	if !isBetaCall(m) {
		return ""
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	prev := p.last
	if prev == nil {
		prev = make(chan struct{})
		close(prev)
	}
	mine := make(chan struct{})
	p.last = mine
	if p.turns == nil {
		p.turns = map[string][2]chan struct{}{}
	}
	p.turns[m.session+string(m.ID)] = [2]chan struct{}{prev, mine}
	return ""
}

func (p *holdBehind) after(m rpcMsg, _, abandoned bool) time.Duration {
	if !isBetaCall(m) {
		return 0
	}
	p.mu.Lock()
	turn, ok := p.turns[m.session+string(m.ID)]
	delete(p.turns, m.session+string(m.ID))
	p.mu.Unlock()
	if !ok {
		return 0
	}
	if !abandoned {
		select { // bounded: a scenario's calls end within a minute
		case <-turn[0]:
		case <-time.After(time.Minute):
		}
	}
	close(turn[1])
	return 0
}
