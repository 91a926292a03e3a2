package control

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// maxAnswer bounds a control API answer the client reads.
const maxAnswer = 32 << 20

// Client talks to one control API (a chaos proxy's or a fake backend's).
// Every request has a deadline.
type Client struct {
	base  string
	token string
	hc    *http.Client
	limit time.Duration
}

// NewClient returns a client for the control API at base, sending token
// as a bearer token when not empty; each request is bounded by timeout.
func NewClient(base, token string, timeout time.Duration) *Client {
	return &Client{base: strings.TrimRight(base, "/"), token: token, limit: timeout,
		hc: &http.Client{Timeout: timeout, Transport: &http.Transport{DisableKeepAlives: true}}}
}

// Base is the API's base URL, without a trailing slash.
func (c *Client) Base() string { return c.base }

// Do sends one request with a JSON body (nil: none) and returns the status
// and the answer.
func (c *Client) Do(ctx context.Context, method, path string, body []byte) (int, []byte, error) {
	ctx, cancel := context.WithTimeout(ctx, c.limit)
	defer cancel()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err == nil && len(data) > maxAnswer {
		err = fmt.Errorf("answer larger than %d bytes", maxAnswer)
	}
	return resp.StatusCode, data, err
}

// APIError turns a non-2xx answer into "what: HTTP status: message", the
// message being the API's {"error"} or else the body.
func APIError(what string, status int, body []byte) error {
	var e struct {
		Error string `json:"error"`
	}
	msg := strings.TrimSpace(string(body))
	if json.Unmarshal(body, &e) == nil && e.Error != "" {
		msg = e.Error
	}
	return fmt.Errorf("%s: HTTP %d: %s", what, status, msg)
}
