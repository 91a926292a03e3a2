package proxy

// STOPGAP: a minimal fault engine behind the Engine seam, until the shared
// fault engine (faults/) lands; then NewEngine returns the shared one and
// this file goes. It decodes bodies with fakebackends.ParseFaults (the same
// schema and errors) and applies, on streamable HTTP POSTs, latency,
// http_status, stall (before_headers), crash (eof, reset), jsonrpc_error and
// tool_error with match, after, count, at and for. Other kinds are refused.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path"
	"sync"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// NewEngine returns the fault engine the proxy uses by default.
func NewEngine() Engine { return &stopgap{} }

type stopgap struct {
	mu     sync.Mutex
	faults []*sgFault
}

type sgFault struct {
	fakebackends.Fault
	setAt    time.Time
	seen     int
	applied  int
	released chan struct{}
}

func (e *stopgap) parse(body []byte, source string) ([]fakebackends.Fault, error) {
	fs, err := fakebackends.ParseFaults(body, source)
	if err != nil {
		return nil, err
	}
	for i := range fs {
		f := &fs[i]
		field := fmt.Sprintf("faults[%d]", i)
		if err := fakebackends.ValidateFault(f, field, fakebackends.TransportStreamableHTTP); err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		ok := false
		switch f.Kind {
		case fakebackends.KindLatency, fakebackends.KindHTTPStatus, fakebackends.KindJSONRPCError, fakebackends.KindToolError:
			ok = f.Probability == nil
		case fakebackends.KindStall:
			ok = f.Stage == fakebackends.StageBeforeHeaders && f.Probability == nil
		case fakebackends.KindCrash:
			ok = f.Mode != fakebackends.CrashDown && f.Stage == fakebackends.StageBeforeHeaders && !f.Exit && f.Probability == nil
		}
		if !ok {
			return nil, fmt.Errorf("%s: %s.kind: %s with these parameters is not supported by the proxy yet", source, field, f.Kind)
		}
	}
	return fs, nil
}

func (e *stopgap) Set(body []byte, source string) error {
	fs, err := e.parse(body, source)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releaseLocked()
	e.appendLocked(fs)
	return nil
}

func (e *stopgap) Add(body []byte, source string) error {
	fs, err := e.parse(body, source)
	if err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.appendLocked(fs)
	return nil
}

func (e *stopgap) appendLocked(fs []fakebackends.Fault) {
	for _, f := range fs {
		e.faults = append(e.faults, &sgFault{Fault: f, setAt: time.Now(), released: make(chan struct{})})
	}
}

func (e *stopgap) releaseLocked() {
	for _, f := range e.faults {
		close(f.released)
	}
	e.faults = nil
}

func (e *stopgap) Clear() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.releaseLocked()
}

func (e *stopgap) List() any {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]fakebackends.Fault, 0, len(e.faults))
	for _, f := range e.faults {
		out = append(out, f.Fault)
	}
	return out
}

func (e *stopgap) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.faults)
}

// decide returns the added latency and the terminal fault for a request.
func (e *stopgap) decide(method, name string) (time.Duration, *sgFault) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var delay time.Duration
	now := time.Now()
	for _, f := range e.faults {
		start := f.setAt.Add(f.At.D())
		if now.Before(start) || (f.For > 0 && !now.Before(start.Add(f.For.D()))) {
			continue
		}
		if f.Match.Method != "" && f.Match.Method != method {
			continue
		}
		if f.Match.Tool != "" {
			if ok, _ := path.Match(f.Match.Tool, name); name == "" || !ok {
				continue
			}
		}
		if f.Kind == fakebackends.KindToolError && method != "tools/call" {
			continue
		}
		f.seen++
		if f.seen <= f.After || (f.Count > 0 && f.applied >= f.Count) {
			continue
		}
		f.applied++
		if f.Kind == fakebackends.KindLatency {
			delay += f.Delay.D()
			continue
		}
		return delay, f
	}
	return delay, nil
}

func (e *stopgap) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 16<<20))
		if err != nil {
			return
		}
		r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
			Params struct {
				Name string `json:"name"`
				URI  string `json:"uri"`
			} `json:"params"`
		}
		_ = json.Unmarshal(body, &msg)
		if msg.Params.Name == "" {
			msg.Params.Name = msg.Params.URI
		}
		if len(msg.ID) == 0 {
			msg.ID = json.RawMessage("null")
		}
		delay, f := e.decide(msg.Method, msg.Params.Name)
		if rec := RecordFrom(r.Context()); rec != nil {
			rec.Method, rec.Tool, rec.ID = msg.Method, msg.Params.Name, string(msg.ID)
			if f != nil {
				rec.Fault = string(f.Kind)
			} else if delay > 0 {
				rec.Fault = "latency"
			}
		}
		if delay > 0 {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-r.Context().Done():
				t.Stop()
				return
			}
		}
		if f == nil {
			next.ServeHTTP(w, r)
			return
		}
		switch f.Kind {
		case fakebackends.KindHTTPStatus:
			for k, v := range f.Headers {
				w.Header().Set(k, v)
			}
			var b []byte
			if f.Body != nil {
				switch {
				case f.Body.JSON != nil:
					b, _ = json.Marshal(f.Body.JSON)
					w.Header().Set("Content-Type", "application/json")
				case f.Body.Raw != "":
					b = []byte(f.Body.Raw)
				default:
					b = []byte(f.Body.Text)
					w.Header().Set("Content-Type", "text/plain; charset=utf-8")
				}
			}
			w.WriteHeader(f.Status)
			_, _ = w.Write(b)
		case fakebackends.KindJSONRPCError, fakebackends.KindToolError:
			var out any = map[string]any{"jsonrpc": "2.0", "id": msg.ID, "error": map[string]any{"code": f.Code, "message": f.Message}}
			if f.Kind == fakebackends.KindToolError {
				out = map[string]any{"jsonrpc": "2.0", "id": msg.ID, "result": map[string]any{
					"content": []any{map[string]any{"type": "text", "text": f.Text}}, "isError": true}}
			}
			b, _ := json.Marshal(out)
			if st := StreamFrom(r.Context()); st != nil {
				w.WriteHeader(http.StatusAccepted)
				st.Inject([]byte("event: message\ndata: " + string(b) + "\n\n"))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(b)
		case fakebackends.KindStall:
			select {
			case <-f.released:
				next.ServeHTTP(w, r)
			case <-r.Context().Done():
			}
		case fakebackends.KindCrash:
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				panic(http.ErrAbortHandler)
			}
			if tc, ok := conn.(*net.TCPConn); ok && f.Mode == fakebackends.CrashReset {
				_ = tc.SetLinger(0)
			}
			_ = conn.Close()
		}
	})
}
