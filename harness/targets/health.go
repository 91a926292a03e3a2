package targets

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// HealthPoller polls a gateway's health API (GET /api/backends/health on
// the reference; the target's AdminAPIs say where and how to read it) and
// records every change of a backend's health or breaker state as a
// transition event.
type HealthPoller struct {
	url      string
	api      StateAPI
	source   string
	header   map[string]string
	rec      *history.Recorder
	interval time.Duration
	hc       *http.Client

	// pollMu serializes polls, from fetch to record: a slow background
	// poll must not record the states it fetched after a later poll
	// recorded newer ones (a transition back to a stale state).
	pollMu sync.Mutex

	mu      sync.Mutex
	last    BackendStates
	changed chan struct{} // closed and replaced on every change

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// NewHealthPoller returns a poller of t's health API at baseURL (t's
// AdminAPIs say where and how to read it; nil: the reference's GET
// /api/backends/health) that records on rec every interval (default 50 ms)
// once started.
func NewHealthPoller(t Target, baseURL string, rec *history.Recorder, interval time.Duration) (*HealthPoller, error) {
	if interval <= 0 {
		interval = pollInterval
	}
	api := TargetAdminAPIs(t).Health
	u, err := api.URL(baseURL, HealthPath, "")
	if err != nil {
		return nil, fmt.Errorf("harness: health API: %w", err)
	}
	return &HealthPoller{url: u, api: api, source: "GET " + strings.TrimPrefix(u, baseURL), header: HeadersOf(t).Health, rec: rec, interval: interval,
		hc: &http.Client{Timeout: runtimes.DefaultControlTimeout}, changed: make(chan struct{}),
		stop: make(chan struct{}), done: make(chan struct{})}, nil
}

// Start polls in the background until Stop.
func (p *HealthPoller) Start() {
	go func() {
		defer close(p.done)
		t := time.NewTicker(p.interval)
		defer t.Stop()
		stopped, stopPolls := context.WithCancel(context.Background()) // Stop ends a poll in flight
		defer stopPolls()
		go func() { <-p.stop; stopPolls() }()
		for {
			ctx, cancel := context.WithTimeout(stopped, p.interval+runtimes.DefaultControlTimeout)
			_, _ = p.Poll(ctx)
			cancel()
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
		}
	}()
}

// Stop stops the background polling and waits for it (bounded).
func (p *HealthPoller) Stop() {
	p.stopOnce.Do(func() { close(p.stop) })
	select {
	case <-p.done:
	case <-time.After(runtimes.DefaultControlTimeout):
	}
}

// Poll reads the health API once, records the transitions since the last
// poll and returns the states.
func (p *HealthPoller) Poll(ctx context.Context) (BackendStates, error) {
	p.pollMu.Lock()
	defer p.pollMu.Unlock()
	data, err := GetJSON(ctx, p.hc, p.url, p.header)
	var states BackendStates
	if err == nil {
		states, err = p.api.Parse(data)
	}
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	changed := false
	for _, name := range states.Names() {
		now, before := states[name], p.last[name]
		if now.State != before.State {
			p.rec.RecordTransition(history.TransitionRecord{Backend: name, Aspect: "health", From: before.State, To: now.State, Source: p.source})
			changed = true
		}
		if now.Breaker != before.Breaker {
			p.rec.RecordTransition(history.TransitionRecord{Backend: name, Aspect: "breaker", From: before.Breaker, To: now.Breaker, Source: p.source})
			changed = true
		}
	}
	p.last = states
	if changed {
		close(p.changed)
		p.changed = make(chan struct{})
	}
	return states, nil
}

// WaitFor waits until cond holds for the latest states, or ctx ends (then
// it returns an error with the last states seen).
func (p *HealthPoller) WaitFor(ctx context.Context, what string, cond func(BackendStates) bool) error {
	for {
		p.mu.Lock()
		last, ch := p.last, p.changed
		p.mu.Unlock()
		if last != nil && cond(last) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("harness: waiting for %s: %w (last states %v)", what, ctx.Err(), Summarize(last))
		}
	}
}

// WaitForState waits until backend's health state (aspect "health") or
// breaker state (aspect "breaker") is want.
func (p *HealthPoller) WaitForState(ctx context.Context, backend, aspect, want string) error {
	return p.WaitFor(ctx, fmt.Sprintf("%s %s = %s", backend, aspect, want), func(s BackendStates) bool {
		b := s[backend]
		if aspect == "breaker" {
			return b.Breaker == want
		}
		return b.State == want
	})
}

// Summarize is "{alpha: healthy/closed, beta: ...}" (state/breaker).
func Summarize(s BackendStates) string {
	parts := make([]string, 0, len(s))
	for _, n := range s.Names() {
		parts = append(parts, fmt.Sprintf("%s: %s/%s", n, s[n].State, s[n].Breaker))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
