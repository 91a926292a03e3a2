package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"time"

	ctlapi "github.com/vmcp-chaos/vmcp-chaos/faults/control"
)

// controlTimeout bounds one control API request.
const controlTimeout = 5 * time.Second

// control talks to one backend's control API (a chaos proxy or a fake
// backend: the same fault routes and /lease).
type control struct {
	b    Backend
	api  *ctlapi.Client
	base string
}

func newControl(b Backend) *control {
	api := ctlapi.NewClient(b.Control, os.Getenv(b.TokenEnv), controlTimeout) // no TokenEnv: no token
	return &control{b: b, api: api, base: api.Base()}
}

// do sends one request and returns the status and body.
func (c *control) do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	status, data, err := c.api.Do(ctx, method, path, body)
	if err != nil {
		return status, data, fmt.Errorf("%s %s: %w", method, c.base+path, err)
	}
	return status, data, nil
}

// call sends one request and fails unless it is answered 200 OK.
func (c *control) call(ctx context.Context, method, path string, body []byte) ([]byte, error) {
	status, data, err := c.do(ctx, method, path, body)
	if err == nil && status != http.StatusOK {
		err = ctlapi.APIError(method+" "+c.base+path, status, data)
	}
	return data, err
}

// faults returns the faults in force.
func (c *control) faults(ctx context.Context) ([]any, error) {
	body, err := c.call(ctx, http.MethodGet, "/faults", nil)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Faults []any `json:"faults"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("GET %s/faults: not a control API answer: %v", c.base, err)
	}
	return doc.Faults, nil
}

// leases reports whether the control API has the lease routes (GET
// /lease answers 200), as a chaos proxy does.
func (c *control) leases(ctx context.Context) bool {
	status, _, err := c.do(ctx, http.MethodGet, "/lease", nil)
	return err == nil && status == http.StatusOK
}

// inject adds faults, asking for a lease of ttl (POST /faults?ttl=, the
// chaos proxy's lease protocol). leased reports whether the answer says a
// lease holds them ({"lease": {"active": true}}): a control API that
// ignores ?ttl= keeps the faults until they are cleared.
func (c *control) inject(ctx context.Context, faults []any, ttl time.Duration) (leased bool, err error) {
	body, err := json.Marshal(faults)
	if err != nil {
		return false, err
	}
	answer, err := c.call(ctx, http.MethodPost, "/faults?ttl="+ttl.String(), body)
	if err != nil {
		return false, err
	}
	var doc struct {
		Lease *struct {
			Active bool `json:"active"`
		} `json:"lease"`
	}
	return json.Unmarshal(answer, &doc) == nil && doc.Lease != nil && doc.Lease.Active, nil
}

// renew renews the lease for ttl. gone reports a lease that no longer
// exists (the faults expired).
func (c *control) renew(ctx context.Context, ttl time.Duration) (gone bool, err error) {
	path := "/lease?ttl=" + ttl.String()
	status, body, err := c.do(ctx, http.MethodPost, path, nil)
	if err != nil {
		return false, err
	}
	if status == http.StatusOK {
		return false, nil
	}
	return status == http.StatusConflict, ctlapi.APIError("POST "+c.base+path, status, body)
}

// clear removes every fault.
func (c *control) clear(ctx context.Context) error {
	_, err := c.call(ctx, http.MethodDelete, "/faults", nil)
	return err
}

// curl is the command that clears the backend's faults by hand.
func (c *control) curl() string {
	auth := ""
	if c.b.TokenEnv != "" {
		auth = fmt.Sprintf(` -H "Authorization: Bearer $%s"`, c.b.TokenEnv)
	}
	return fmt.Sprintf("curl -fsS -X DELETE%s '%s/faults'", auth, c.base)
}
