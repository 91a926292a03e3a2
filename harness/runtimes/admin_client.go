package runtimes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// AdminAPI is a client of a fake backend's control API (`chaos backend
// --admin`), for the process runtime and runtimes outside this package.
// Every call has a deadline (its ctx, else DefaultControlTimeout). Its
// methods are those of RunningBackend that act through the control API, so
// a runtime's backend can embed it (see Named).
type AdminAPI struct {
	api  *control.Client
	wrap func(op string, err error) error // see Named
}

// NewAdminAPI returns a client of the control API at base (e.g.
// http://127.0.0.1:41234) sending token as a bearer token ("" for none).
func NewAdminAPI(base, token string) *AdminAPI {
	return &AdminAPI{api: control.NewClient(base, token, DefaultControlTimeout)}
}

// Named returns a copy of a whose methods pass their errors through wrap
// with the operation ("set faults on", "restart", ...), e.g. to name the
// backend; wrap returns nil for a nil error.
func (a *AdminAPI) Named(wrap func(op string, err error) error) *AdminAPI {
	return &AdminAPI{api: a.api, wrap: wrap}
}

// named passes an error of op through wrap (Named).
func (a *AdminAPI) named(op string, err error) error {
	if a.wrap == nil {
		return err
	}
	return a.wrap(op, err)
}

// do sends one request; out, when non-nil, receives the JSON answer.
func (a *AdminAPI) do(ctx context.Context, method, path string, body any, out any) error {
	var data []byte
	if body != nil {
		var err error
		if data, err = json.Marshal(body); err != nil {
			return err
		}
	}
	status, answer, err := a.api.Do(ctx, method, path, data)
	if err != nil {
		return fmt.Errorf("control API %s %s: %w", method, path, err)
	}
	if status/100 != 2 {
		return control.APIError("control API "+method+" "+path, status, answer)
	}
	if out != nil {
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("control API %s %s: decode answer: %w", method, path, err)
		}
	}
	return nil
}

// SetFaults replaces every fault in force.
func (a *AdminAPI) SetFaults(ctx context.Context, fs ...faults.Fault) error {
	if fs == nil {
		fs = []faults.Fault{}
	}
	// The harness owns its backends and clears their faults itself: it
	// takes the longest lease, never renewed (no scenario lasts 10 min).
	err := a.do(ctx, http.MethodPut, "/faults?ttl="+control.DefaultMaxLeaseTTL.String(), map[string]any{"faults": fs}, nil)
	return a.named("set faults on", err)
}

// ClearFaults removes every fault.
func (a *AdminAPI) ClearFaults(ctx context.Context) error {
	return a.named("clear faults of", a.do(ctx, http.MethodDelete, "/faults", nil, nil))
}

// ExpireSessions makes the backend forget its sessions.
func (a *AdminAPI) ExpireSessions(ctx context.Context) (int, error) {
	var out struct {
		Expired int `json:"expired"`
	}
	err := a.do(ctx, http.MethodPost, "/expire-sessions", nil, &out)
	return out.Expired, a.named("expire sessions of", err)
}

// Restart restarts the backend's MCP server behind the same listener.
func (a *AdminAPI) Restart(ctx context.Context) error {
	return a.named("restart", a.do(ctx, http.MethodPost, "/restart", nil, nil))
}

// Requests returns the backend's request log.
func (a *AdminAPI) Requests(ctx context.Context) ([]fakebackends.RequestRecord, error) {
	var out struct {
		Requests []fakebackends.RequestRecord `json:"requests"`
	}
	err := a.do(ctx, http.MethodGet, "/requests", nil, &out)
	return out.Requests, a.named("read requests of", err)
}
