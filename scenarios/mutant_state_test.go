package scenarios_test

// The mutants' policies of state (mutant_front_test.go): sessions,
// restarts, keepalive and the admin APIs.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// afterSessionLoss misbehaves once beta lost its backend session (it
// answered a request 404, closed a connection, or its GET stream ended:
// it restarted, or its sessions expired), by mode: "slow": the gateway is
// slow to take beta back (beta's next two calls fail; its first two 404s
// reach the gateway as 502s; the end of its SSE stream, a second late);
// "alpha": alpha's next call fails;
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
type noStart struct{ targets.Reference }

func (noStart) Start(context.Context, targets.TopologyInfo) (targets.Gateway, error) {
	return nil, errors.New("mutant: the gateway exited at start (status 1)")
}
