package main

import (
	"context"
	"encoding/json"
	"net/http"
	"time"
)

// cancelTurn is the decision taken for one request's cancellation.
type cancelTurn struct {
	acts bool
	at   time.Time
}

// cancelMemory is how long a request's decision holds: its
// notifications/cancelled and its abandoned HTTP request, which a client
// sends within moments of each other, are one cancellation.
const cancelMemory = 10 * time.Second

// cancelActs reports whether the cancellation of request id in session
// is acted on: the 1st, (N+1)th, (2N+1)th... cancellation seen is, the
// others are not. The notification and the abandonment of one request
// count once and share the decision.
func (q *quirks) cancelActs(session string, id json.RawMessage) bool {
	key := session + " " + canonicalID(id)
	now := time.Now()
	q.mu.Lock()
	defer q.mu.Unlock()
	if t, ok := q.cancelTurns[key]; ok && now.Sub(t.at) < cancelMemory {
		return t.acts
	}
	if q.cancelTurns == nil || len(q.cancelTurns) > 10000 {
		q.cancelTurns = map[string]cancelTurn{}
	}
	t := cancelTurn{acts: q.cancels%q.cancelOneIn == 0, at: now}
	q.cancels++
	q.cancelTurns[key] = t
	return t.acts
}

// withCancelOneIn serves r with a context its client's going away ends
// only when cancelActs says so (cancelOneIn); stop before the handler
// returns (the server ends r's context then).
func (q *quirks) withCancelOneIn(r *http.Request, req request) (_ *http.Request, stop func()) {
	if q.cancelOneIn <= 0 || canonicalID(req.ID) == "" {
		return r, func() {}
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	after := context.AfterFunc(r.Context(), func() {
		if q.cancelActs(req.session, req.ID) {
			cancel()
		}
	})
	return r.WithContext(ctx), func() { after(); cancel() }
}
