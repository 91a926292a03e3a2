package faults

import (
	"cmp"
	"context"
	"net/http"
	"slices"
)

// KindStall holds the request without answering, at its stage, until the
// fault is removed (replaced or cleared), the server ends or the client
// goes away.
const KindStall Kind = "stall"

var stallStages = []string{StageBeforeHeaders, StageAfterHeaders, StageAfterProgress, StageMidBody}

// Stall are the parameters of stall.
type Stall struct {
	Stage    string `yaml:"stage,omitempty" json:"stage,omitempty"`       // before_headers (default), after_headers, after_progress, mid_body
	Progress int    `yaml:"progress,omitempty" json:"progress,omitempty"` // after_progress: notifications sent first (default 1)
}

func init() {
	Register(Spec{Kind: KindStall, Order: 30, New: func() Params { return &Stall{} }})
}

// Defaults implements Params.
func (p *Stall) Defaults() {
	p.Stage = cmp.Or(p.Stage, StageBeforeHeaders)
	if p.Stage == StageAfterProgress && p.Progress == 0 {
		p.Progress = 1
	}
}

// Validate implements Params.
func (p *Stall) Validate(c *Check) error {
	if p.Stage != "" && !slices.Contains(stallStages, p.Stage) {
		return c.Errf("stage", "unknown stall stage %q (want %s)", p.Stage, join(stallStages))
	}
	if p.Progress < 0 {
		return c.Errf("progress", "must be at least 1")
	}
	if p.Progress > 1000 {
		return c.Errf("progress", "%d out of range (want 1..1000)", p.Progress)
	}
	if p.Progress != 0 && p.Stage != StageAfterProgress {
		return c.Errf("progress", "progress applies only to stage after_progress")
	}
	return nil
}

// Stdio implements Params.
func (p *Stall) Stdio(x *StdioExchange) {
	if p.Stage == StageAfterProgress {
		for i := 1; i <= p.Progress; i++ {
			x.Write(x.Msg.ProgressNotification(i, p.Progress+1))
		}
	}
	select {
	case <-x.Released:
		x.Forward()
	case <-x.Done:
	}
}

// HTTP implements Params. Released, a before_headers stall is served
// normally; on streamable HTTP a stall at a later stage ends its response
// unfinished. On an SSE stream a later stage answers the POST 202 at once
// (and closes its connection), holds the answer back from the stream and,
// released, delivers the real answer there (after ending a cut mid_body
// event).
func (p *Stall) HTTP(x *Exchange) bool {
	if p.Stage == StageBeforeHeaders {
		return x.Wait()
	}
	var early []byte
	switch p.Stage {
	case StageAfterProgress:
		for i := 1; i <= p.Progress; i++ {
			early = append(early, SSEEvent(x.Msg.ProgressNotification(i, p.Progress+1))...)
		}
	case StageMidBody:
		early = []byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + string(x.Msg.IDOr()) + ",\"res")
	}
	if x.Stream == nil {
		x.W.Header().Set("Content-Type", "text/event-stream")
		x.W.Header().Set("Cache-Control", "no-cache")
		x.W.WriteHeader(http.StatusOK)
		_, _ = x.W.Write(early)
		x.Flush()
		x.Wait()
		return false
	}
	x.W.Header().Set("Content-Length", "0")
	x.W.Header().Set("Connection", "close")
	x.W.WriteHeader(http.StatusAccepted)
	x.Flush()
	if len(early) > 0 {
		x.Stream.Inject(early)
	}
	if !x.waitOn(nil, x.Stream.Done()) { // the POST is answered: only the stream counts
		return false
	}
	if p.Stage == StageMidBody {
		x.Stream.Inject([]byte("\n\n")) // end the cut event; the answer comes as its own
	}
	// The POST was answered already and its connection closed: the real
	// request goes on for as long as the stream lives, and its answer goes
	// to the stream.
	ctx, cancel := context.WithCancel(context.WithoutCancel(x.R.Context()))
	defer cancel()
	go func() {
		select {
		case <-x.Stream.Done():
			cancel()
		case <-ctx.Done(): // served
		}
	}()
	x.Next.ServeHTTP(&sinkWriter{header: http.Header{}}, x.R.WithContext(ctx))
	return false
}

// sinkWriter is a ResponseWriter that discards everything.
type sinkWriter struct{ header http.Header }

func (s *sinkWriter) Header() http.Header         { return s.header }
func (s *sinkWriter) Write(p []byte) (int, error) { return len(p), nil }
func (s *sinkWriter) WriteHeader(int)             {}
