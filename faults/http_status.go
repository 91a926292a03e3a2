package faults

import (
	"encoding/json"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
	"golang.org/x/net/http/httpguts"
)

// KindHTTPStatus answers with an HTTP status, optional headers and body.
const KindHTTPStatus Kind = "http_status"

// HTTPStatus are the parameters of http_status.
type HTTPStatus struct {
	Status  int               `yaml:"status,omitempty" json:"status,omitempty"`
	Body    *Body             `yaml:"body,omitempty" json:"body,omitempty"`
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

func init() {
	Register(Spec{Kind: KindHTTPStatus, Order: 20, New: func() Params { return &HTTPStatus{} }})
}

// HTTP implements Params.
func (p *HTTPStatus) HTTP(x *Exchange) bool {
	w := x.W
	for k, v := range p.Headers {
		w.Header().Set(k, v)
	}
	var body []byte
	ctype := ""
	if b := p.Body; b != nil {
		switch {
		case b.JSON != nil:
			body, _ = json.Marshal(b.JSON)
			ctype = "application/json"
		case b.Raw != "":
			body = []byte(b.Raw)
		default:
			body, ctype = []byte(b.Text), "text/plain; charset=utf-8"
		}
	}
	if ctype != "" && w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", ctype)
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
	return false
}

// Validate implements Params.
func (p *HTTPStatus) Validate(c *Check) error {
	if p.Status == 0 {
		return c.Errf("status", "required (an HTTP status such as 403)")
	}
	if p.Status < 100 || p.Status > 599 {
		return c.Errf("status", "HTTP status %d out of range (want 100..599)", p.Status)
	}
	if b := p.Body; b != nil && btoi(b.Text != "")+btoi(b.JSON != nil)+btoi(b.Raw != "") != 1 {
		return c.Errf("body", "exactly one of text, json, raw")
	}
	for name, val := range p.Headers {
		hf := strictyaml.MapField("headers", name)
		if !httpguts.ValidHeaderFieldName(name) { // an RFC 9110 token
			return c.Errf(hf, "invalid header name %q", name)
		}
		if strings.ContainsAny(val, "\r\n\x00") {
			return c.Errf(hf, "header value must not contain CR, LF or NUL")
		}
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
