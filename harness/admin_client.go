package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// adminClient talks to a fake backend's control API over HTTP. Every
// request has a deadline.
type adminClient struct{ api *control.Client }

func newAdminClient(base, token string) *adminClient {
	return &adminClient{api: control.NewClient(base, token, DefaultControlTimeout)}
}

// do sends one request; out, when non-nil, receives the JSON answer.
func (a *adminClient) do(ctx context.Context, method, path string, body any, out any) error {
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

func (a *adminClient) setFaults(ctx context.Context, method string, faults []fakebackends.Fault) error {
	if faults == nil {
		faults = []fakebackends.Fault{}
	}
	return a.do(ctx, method, "/faults", map[string]any{"faults": faults}, nil)
}

func (a *adminClient) clearFaults(ctx context.Context) error {
	return a.do(ctx, http.MethodDelete, "/faults", nil, nil)
}

func (a *adminClient) expire(ctx context.Context) (int, error) {
	var out struct {
		Expired int `json:"expired"`
	}
	err := a.do(ctx, http.MethodPost, "/expire-sessions", nil, &out)
	return out.Expired, err
}

func (a *adminClient) restart(ctx context.Context) error {
	return a.do(ctx, http.MethodPost, "/restart", nil, nil)
}

func (a *adminClient) requests(ctx context.Context) ([]fakebackends.RequestRecord, error) {
	var out struct {
		Requests []fakebackends.RequestRecord `json:"requests"`
	}
	err := a.do(ctx, http.MethodGet, "/requests", nil, &out)
	return out.Requests, err
}

func (a *adminClient) healthz(ctx context.Context) error {
	return a.do(ctx, http.MethodGet, "/healthz", nil, nil)
}
