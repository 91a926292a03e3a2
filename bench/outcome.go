package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// outcome is one call made where an error is expected.
type outcome struct {
	d time.Duration
	// failed: the call returned an error or an isError result.
	failed bool
	// unanswered: the call's own deadline ended it.
	unanswered bool
	// named: the error names the backend (namesBackend).
	named bool
	text  string
}

// callOnce calls tool at cl with its own deadline and judges the outcome
// against backend, the backend the call is meant to reach.
func callOnce(ctx context.Context, cl *history.Client, tool, backend string, timeout time.Duration) outcome {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t0 := time.Now()
	res, err := cl.MCP().CallTool(cctx, mcp.CallToolRequest{Params: mcp.CallToolParams{Name: tool, Arguments: map[string]any{"msg": "hello"}}})
	o := outcome{d: time.Since(t0)}
	var meta map[string]any
	switch {
	case err != nil:
		o.failed, o.text = true, err.Error()
		o.unanswered = errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil
	case res == nil:
		o.failed, o.text = true, "no result and no error"
	case res.IsError:
		o.failed, o.text = true, history.ResultText(res)
		meta = history.MetaFields(res.Meta)
	}
	o.named = o.failed && !o.unanswered && namesBackend(o.text, meta, tool, backend)
	return o
}

// namesBackend reports whether an error (its text and its result's _meta)
// names backend as a whole word (history.NamesBackend), after the name of
// what was called is taken out: "beta_echo" or "echo@beta" in `unknown
// tool echo@beta` is the caller's words, not the gateway naming beta.
// Behaviour, not wording: any sentence, any _meta key will do.
func namesBackend(text string, meta map[string]any, called, backend string) bool {
	all := text
	if len(meta) > 0 {
		if b, err := json.Marshal(meta); err == nil {
			all += "\n" + string(b)
		}
	}
	return history.NamesBackend(history.WithoutCalled(all, called, backend), backend)
}

// setCallFigures writes the call count, errors, unanswered calls and
// latency quantiles of one endpoint (prefix "direct" or "gateway").
func setCallFigures(rec *history.Recorder, prefix string, lat []time.Duration, errors, unanswered int) {
	p50, p99, mx := quantiles(lat)
	rec.SetFigure(prefix+".calls", float64(len(lat)))
	rec.SetFigure(prefix+".errors", float64(errors))
	rec.SetFigure(prefix+".unanswered", float64(unanswered))
	rec.SetFigure(prefix+".p50_ms", ms(p50))
	rec.SetFigure(prefix+".p99_ms", ms(p99))
	rec.SetFigure(prefix+".max_ms", ms(mx))
}

// outcomes sums calls made where an error is expected.
type outcomes struct {
	lat        []time.Duration
	failed     int
	unanswered int
	named      int
	first      string // the first error's text
}

func (s *outcomes) add(o outcome) {
	s.lat = append(s.lat, o.d)
	if !o.failed {
		return
	}
	s.failed++
	if o.unanswered {
		s.unanswered++
	}
	if o.named {
		s.named++
	}
	s.first = cmp.Or(s.first, o.text)
}

// set writes the figures of one endpoint (prefix "direct" or "gateway").
func (s *outcomes) set(rec *history.Recorder, prefix string, withNames bool) {
	setCallFigures(rec, prefix, s.lat, s.failed, s.unanswered)
	if withNames {
		rec.SetFigure(prefix+".errors_naming_backend", float64(s.named))
	}
	if s.first != "" {
		rec.Note("%s: first error: %s", prefix, s.first)
	}
}
