package harness

import (
	"context"
	"errors"
	"regexp"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// Keys of the _meta a vMCP adds to an isError tool result.
const (
	MetaBackend   = "vmcp/backend"
	MetaErrorKind = "vmcp/errorKind"
)

var (
	unavailableRE = regexp.MustCompile(`backend "([^"]+)" unavailable`)
	backendErrRE  = regexp.MustCompile(`backend "([^"]+)" error`)
)

// UnavailableBackend returns the backend an error text names as unavailable
// (`backend "beta" unavailable: ...`).
func UnavailableBackend(text string) (string, bool) {
	if m := unavailableRE.FindStringSubmatch(text); m != nil {
		return m[1], true
	}
	return "", false
}

// namedBackend returns the backend an error text names, as unavailable or
// as having answered with an error (`backend "beta" error: ...`).
func namedBackend(text string) string {
	if b, ok := UnavailableBackend(text); ok {
		return b
	}
	if m := backendErrRE.FindStringSubmatch(text); m != nil {
		return m[1]
	}
	return ""
}

// ResultText returns the text contents of a tool result, joined by
// newlines ("" for nil).
func ResultText(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var parts []string
	for _, c := range res.Content {
		switch tc := c.(type) {
		case mcp.TextContent:
			parts = append(parts, tc.Text)
		case *mcp.TextContent:
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// metaFields returns a result's _meta as a plain map (nil when empty).
func metaFields(m *mcp.Meta) map[string]any {
	if m == nil {
		return nil
	}
	out := map[string]any{}
	for k, v := range m.AdditionalFields {
		out[k] = v
	}
	if m.ProgressToken != nil {
		out["progressToken"] = m.ProgressToken
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// notUnavailableKinds are vmcp error kinds that do not mean "unavailable".
var notUnavailableKinds = map[string]bool{"jsonrpc_error": true, "canceled": true}

// classify fills the outcome fields of rec from a call's result and error.
// ctxErr is the call context's error after the call.
func classify(rec *CallRecord, isError bool, text string, meta map[string]any, err, ctxErr error) {
	rec.Meta = meta
	if b, ok := meta[MetaBackend].(string); ok {
		rec.Backend = b
	}
	if k, ok := meta[MetaErrorKind].(string); ok {
		rec.ErrorKind = k
	}
	switch {
	case err != nil:
		rec.Error = err.Error()
		if rec.Backend == "" {
			rec.Backend = namedBackend(rec.Error)
		}
		_, unavailable := UnavailableBackend(rec.Error)
		switch {
		case errors.Is(ctxErr, context.DeadlineExceeded) || (errors.Is(err, context.DeadlineExceeded) && !unavailable):
			rec.Outcome = OutcomeTimeout
		case unavailable:
			rec.Outcome = OutcomeBackendUnavailable
		default:
			rec.Outcome = OutcomeError
		}
	case isError:
		rec.IsError = true
		rec.Error = text
		if rec.Backend == "" {
			rec.Backend = namedBackend(text)
		}
		_, unavailable := UnavailableBackend(text)
		if unavailable || (rec.ErrorKind != "" && !notUnavailableKinds[rec.ErrorKind]) {
			rec.Outcome = OutcomeBackendUnavailable
		} else {
			rec.Outcome = OutcomeToolError
		}
	default:
		rec.Outcome = OutcomeOK
	}
}
