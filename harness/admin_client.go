package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
)

// adminClient talks to a fake backend's control API over HTTP. Every
// request has a deadline.
type adminClient struct {
	base   string
	token  string
	client *http.Client
}

func newAdminClient(base, token string) *adminClient {
	return &adminClient{base: strings.TrimRight(base, "/"), token: token,
		client: &http.Client{Timeout: DefaultControlTimeout, Transport: &http.Transport{DisableKeepAlives: true}}}
}

// do sends one request; out, when non-nil, receives the JSON answer.
func (a *adminClient) do(ctx context.Context, method, path string, body any, out any) error {
	ctx, cancel := withDefaultTimeout(ctx, DefaultControlTimeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.client.Do(req)
	if err != nil {
		return fmt.Errorf("control API %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 32<<20))
	if err != nil {
		return fmt.Errorf("control API %s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error string `json:"error"`
		}
		if json.Unmarshal(data, &e) == nil && e.Error != "" {
			return fmt.Errorf("control API %s %s: HTTP %d: %s", method, path, resp.StatusCode, e.Error)
		}
		return fmt.Errorf("control API %s %s: HTTP %d: %s", method, path, resp.StatusCode, strings.TrimSpace(string(data)))
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
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
