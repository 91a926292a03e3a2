package history

import (
	"cmp"
	"context"
	"errors"
	"maps"
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

// BackendAnswered reports whether an error text is the reference's wording
// for a backend that answered with an error of its own (`backend "beta"
// error: ...`), which is not the backend being unavailable.
func BackendAnswered(text string) bool { return backendErrRE.MatchString(text) }

// namedBackend returns the backend an error text names: as unavailable or
// as having answered with an error in the reference's words (`backend
// "beta" unavailable|error`), else the one of backends the text names
// (NamesBackend). ok is false when it names none, or several of backends.
func namedBackend(text string, backends []string) (name string, ok bool) {
	if b, ok := UnavailableBackend(text); ok {
		return b, true
	}
	if m := backendErrRE.FindStringSubmatch(text); m != nil {
		return m[1], true
	}
	for _, b := range backends {
		if NamesBackend(text, b) {
			if name != "" {
				return "", false
			}
			name = b
		}
	}
	return name, name != ""
}

// WithoutCalled returns text with the name of what was called (e.g.
// "beta_echo", "echo@beta", "mem://beta/readme") replaced, in any case, by
// "<called>", unless called is the backend's own name: `not found: tool
// "echo@beta"` is the caller's words, not the gateway naming beta.
func WithoutCalled(text, called, backend string) string {
	if called == "" || strings.EqualFold(called, backend) {
		return text
	}
	return regexp.MustCompile("(?i)"+regexp.QuoteMeta(called)).ReplaceAllLiteralString(text, "<called>")
}

// NamesBackend reports whether an error text names backend: the name as a
// whole word (not part of a longer name or identifier such as
// "beta_echo" or "beta-2"), bare or quoted, in any case. It is how a
// gateway that is not ours is held to "the error names the backend".
func NamesBackend(text, backend string) bool {
	if backend == "" {
		return false
	}
	lt, lb := strings.ToLower(text), strings.ToLower(backend)
	for i := 0; ; {
		j := strings.Index(lt[i:], lb)
		if j < 0 {
			return false
		}
		start, end := i+j, i+j+len(lb)
		if !nameChar(lt, start-1) && !nameChar(lt, end) {
			return true
		}
		i = start + 1
	}
}

// nameChar reports whether s[i] exists and could continue a name.
func nameChar(s string, i int) bool {
	if i < 0 || i >= len(s) {
		return false
	}
	c := s[i]
	return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 0x80
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

// recordedMeta returns a result's _meta as a plain map (nil when empty).
func recordedMeta(m *mcp.Meta) map[string]any {
	if m == nil {
		return nil
	}
	out := map[string]any{}
	maps.Copy(out, m.AdditionalFields)
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
// rec.Unanswered (what the wire showed: dropped, refused or "") decides
// whether an error was an answer at all, never the error's words.
// ctxErr is the call context's error after the call; backends are the
// topology's backend names (may be nil). An error, or an isError result
// without the reference's vmcp/errorKind, counts as "backend unavailable"
// when its text names a backend: in the reference's words (`backend "x"
// unavailable`), or, for any gateway, by naming exactly one of backends.
func classify(rec *CallRecord, isError bool, text string, meta map[string]any, err, ctxErr error, backends []string) {
	rec.Meta = meta
	if b, ok := meta[MetaBackend].(string); ok {
		rec.Backend = b
	}
	if k, ok := meta[MetaErrorKind].(string); ok {
		rec.ErrorKind = k
	}
	// unavailable reports whether text says a backend is unavailable: in
	// the reference's words, or (when byName) by naming one of backends
	// without saying it answered with an error of its own.
	unavailable := func(text string, byName bool) bool {
		named, names := namedBackend(text, backends)
		rec.Backend = cmp.Or(rec.Backend, named)
		_, said := UnavailableBackend(text)
		return said || (byName && names && !backendErrRE.MatchString(text))
	}
	switch {
	case err != nil:
		rec.Error = err.Error()
		down := unavailable(rec.Error, true)
		switch {
		case errors.Is(ctxErr, context.DeadlineExceeded) || (errors.Is(err, context.DeadlineExceeded) && !down):
			rec.Outcome = OutcomeTimeout
		case rec.Unanswered == "dropped":
			rec.Outcome = OutcomeDropped
		case down:
			rec.Outcome = OutcomeBackendUnavailable
		default:
			rec.Outcome = OutcomeError
		}
	case isError:
		rec.IsError = true
		rec.Error = text
		if unavailable(text, rec.ErrorKind == "") || (rec.ErrorKind != "" && !notUnavailableKinds[rec.ErrorKind]) {
			rec.Outcome = OutcomeBackendUnavailable
		} else {
			rec.Outcome = OutcomeToolError
		}
	default:
		rec.Outcome = OutcomeOK
	}
}
