package vmcp

import (
	"context"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/backend"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// pool is the shared, bounded set of backend clients that serves stateless
// (2026-07-28) clients. Each backend has up to cfg.Pool.Size members; a new
// one is added only when every existing one is busy.
type pool struct {
	g      *Gateway
	ctx    context.Context
	cancel context.CancelCauseFunc
	wg     sync.WaitGroup // members' background work (closes, re-initializations)
	opens  sync.WaitGroup // openings under way

	mu        sync.Mutex
	slots     map[string][]*poolSlot
	agg       *aggregate
	version   atomic.Int64
	opened    bool
	opening   chan struct{} // closed when the opening under way ends
	lastRetry time.Time
	closed    bool

	// Published under mu for the request path, which reads them without
	// it: ready is opened && !closed && no opening under way; view is
	// agg; snap is a copy of slots (replaced, never changed in place).
	ready atomic.Bool
	view  atomic.Pointer[aggregate]
	snap  atomic.Pointer[map[string][]*poolSlot]
}

// publishLocked makes the request path see the pool's state. Called with
// p.mu held after any change of slots, agg, opened, opening or closed.
func (p *pool) publishLocked() {
	p.ready.Store(p.opened && !p.closed && p.opening == nil)
	p.view.Store(p.agg)
	snap := maps.Clone(p.slots)
	p.snap.Store(&snap)
}

type poolSlot struct {
	m        *member
	inflight atomic.Int64
}

// busyThreshold is how many concurrent requests a pool member carries
// before the pool opens another (up to its size).
const busyThreshold = 8

// retryInterval bounds how often the pool retries backends that failed.
const poolRetryInterval = time.Second

func newPool(g *Gateway) *pool {
	ctx, cancel := context.WithCancelCause(g.ctx)
	return &pool{g: g, ctx: ctx, cancel: cancel, slots: map[string][]*poolSlot{}}
}

// ensure opens the pool on first use and, when retry is set, reconnects
// backends that have no live member (at most once per poolRetryInterval,
// counted from the end of the last opening).
// It returns the current aggregate.
func (p *pool) ensure(ctx context.Context, retry bool) (*aggregate, error) {
	if !retry && p.ready.Load() {
		if agg := p.view.Load(); agg != nil {
			return agg, nil // the common case: no lock
		}
	}
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return nil, backend.ErrSessionClosing
		}
		if opening := p.opening; opening != nil {
			if p.opened && p.agg != nil {
				// A retry of backends that failed is under way: it never
				// holds up requests (a backend whose initialize hangs would
				// stall every other backend's calls until its timeout); the
				// backends that work are in the current view.
				agg := p.agg
				p.mu.Unlock()
				return agg, nil
			}
			p.mu.Unlock()
			select {
			case <-opening:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		var todo []config.Backend
		if !p.opened {
			todo = p.g.cfg.Backends
		} else if retry && time.Since(p.lastRetry) >= poolRetryInterval {
			for _, b := range p.g.cfg.Backends {
				if len(p.liveLocked(b.Name)) == 0 {
					todo = append(todo, b)
				}
			}
		}
		if len(todo) == 0 {
			agg := p.agg
			p.mu.Unlock()
			if agg == nil {
				return nil, p.noBackend()
			}
			return agg, nil
		}
		done := make(chan struct{})
		p.opening = done
		p.opens.Add(1)
		p.publishLocked()
		p.mu.Unlock()

		members := p.g.openAll(p.ctx, p.ctx, "", &p.wg, todo, false)

		p.mu.Lock()
		if p.closed {
			// close ran while these were opening: they are not the pool's
			// to close, so they are closed here, before close returns.
			p.opening = nil
			p.publishLocked()
			p.mu.Unlock()
			closeMembers(members)
			close(done)
			p.opens.Done()
			return nil, backend.ErrSessionClosing
		}
		for _, m := range members {
			name := m.backend.Name
			if m.conn == nil {
				// Keep the failed member for its status; it carries no
				// connection and is replaced on the next retry.
				p.slots[name] = []*poolSlot{{m: m}}
				continue
			}
			p.slots[name] = append(p.liveLocked(name), &poolSlot{m: m})
		}
		p.opened = true
		// The interval runs from the end of an opening: one that takes
		// the whole initialize timeout does not make the next request
		// retry at once.
		p.lastRetry = time.Now()
		p.rebuildLocked()
		p.opening = nil
		p.publishLocked()
		p.mu.Unlock()
		close(done)
		p.opens.Done()
	}
}

// closeMembers closes members and waits until they are closed.
func closeMembers(members []*member) {
	chans := make([]<-chan struct{}, 0, len(members))
	for _, m := range members {
		chans = append(chans, m.close())
	}
	for _, ch := range chans {
		<-ch
	}
}

// liveLocked returns the backend's members that have a connection.
func (p *pool) liveLocked(name string) []*poolSlot { return liveSlots(p.slots[name]) }

// liveSlots returns the slots whose member has a connection. A member's
// connection is read under the member's own lock (a re-initialization
// replaces it); p.mu is taken before m.mu, never after.
func liveSlots(slots []*poolSlot) []*poolSlot {
	return slices.DeleteFunc(slices.Clone(slots), func(s *poolSlot) bool { return !s.m.hasView() })
}

func (p *pool) rebuildLocked() {
	views := map[string]backendView{}
	for name := range p.slots {
		if live := p.liveLocked(name); len(live) > 0 {
			views[name] = live[0].m.viewOf()
		}
	}
	if len(views) == 0 {
		p.agg = nil
	} else {
		p.agg = buildAggregate(p.g.cfg.Aggregation, views)
	}
	p.version.Add(1)
}

func (p *pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

func (p *pool) noBackend() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return noBackendError(p.membersLocked())
}

// membersLocked returns every member of the pool, backends in
// configuration order.
func (p *pool) membersLocked() []*member {
	var members []*member
	for _, b := range p.g.cfg.Backends {
		for _, s := range p.slots[b.Name] {
			members = append(members, s.m)
		}
	}
	return members
}

// snapshot returns the current aggregate with its version.
func (p *pool) snapshot() (*aggregate, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.agg, p.version.Load()
}

func (p *pool) aggregate() *aggregate { return p.view.Load() }

// call routes a request to the least busy member of the backend, growing
// the pool when all are busy.
func (p *pool) call(ctx context.Context, backend, op string, fn func(context.Context, *client.Client) error) *BackendError {
	slot, be := p.pick(ctx, backend, op)
	if be != nil {
		return be
	}
	slot.inflight.Add(1)
	defer slot.inflight.Add(-1)
	return slot.m.do(ctx, op, p.g.cfg.Timeouts.Call, fn)
}

func (p *pool) pick(ctx context.Context, name, op string) (*poolSlot, *BackendError) {
	// No pool-wide lock: the published copy of the slots, each member's
	// connection read under its own lock.
	var live []*poolSlot
	if snap := p.snap.Load(); snap != nil {
		live = liveSlots((*snap)[name])
	}
	if !p.ready.Load() && p.isClosed() {
		return nil, &BackendError{Backend: name, Op: op, Kind: KindClosed, Cause: "gateway closing", Err: backend.ErrSessionClosing}
	}
	if len(live) == 0 {
		return nil, &BackendError{Backend: name, Op: op, Kind: KindClosed, Cause: "no connection in the pool"}
	}
	best := live[0]
	for _, s := range live[1:] {
		if s.inflight.Load() < best.inflight.Load() {
			best = s
		}
	}
	if best.inflight.Load() < busyThreshold || len(live) >= p.g.cfg.Pool.Size {
		return best, nil
	}
	b, _ := p.g.cfg.Backend(name)
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return best, nil
	}
	p.opens.Add(1)
	p.mu.Unlock()
	defer p.opens.Done()
	m := p.g.openMember(ctx, p.ctx, "", &p.wg, b, false)
	if m.conn == nil {
		return best, nil // could not grow: share the busy one
	}
	slot := &poolSlot{m: m}
	p.mu.Lock()
	if p.closed || len(p.liveLocked(name)) >= p.g.cfg.Pool.Size {
		p.mu.Unlock()
		<-m.close()
		return best, nil
	}
	p.slots[name] = append(p.slots[name], slot)
	p.publishLocked()
	p.mu.Unlock()
	return slot, nil
}

// close closes every pool member. Openings under way (cut short by the
// pool's context) end first and close what they opened; no member is added
// once closed is set, and every p.wg.Add happens before p.wg.Wait (in an
// opening, or in a member that is not yet closed).
func (p *pool) close() {
	p.cancel(backend.ErrSessionClosing)
	p.mu.Lock()
	p.closed = true
	p.publishLocked()
	p.mu.Unlock()
	p.opens.Wait()
	p.mu.Lock()
	members := p.membersLocked()
	p.mu.Unlock()
	closeMembers(members)
	p.wg.Wait()
}

// PoolStatus is the JSON view of the shared pool.
type PoolStatus struct {
	Opened   bool                      `json:"opened"`
	Backends map[string][]MemberStatus `json:"backends"`
}

func (p *pool) status() PoolStatus {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := PoolStatus{Opened: p.opened, Backends: map[string][]MemberStatus{}}
	for name, slots := range p.slots {
		for _, s := range slots {
			st.Backends[name] = append(st.Backends[name], s.m.status())
		}
	}
	return st
}
