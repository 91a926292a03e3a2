package vmcp

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"strconv"
	"sync/atomic"
)

// holderKey is the context key of the holder (an
// *atomic.Pointer[BackendError]) that carries the *BackendError a
// resources/read or prompts/get handler failed with from the handler back
// to the HTTP layer, which adds it as the JSON-RPC error's data (mcp-go
// only sets code and message).
type holderKey struct{}

// holdError records be for the current request, if it has a holder.
func holdError(ctx context.Context, be *BackendError) {
	if h, ok := ctx.Value(holderKey{}).(*atomic.Pointer[BackendError]); ok {
		h.Store(be)
	}
}

// bufferedWriter buffers a whole response. It deliberately does not
// implement http.Flusher, so mcp-go answers with one JSON body.
type bufferedWriter struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) Write(p []byte) (int, error) {
	b.status = cmp.Or(b.status, http.StatusOK)
	return b.body.Write(p)
}

func (b *bufferedWriter) WriteHeader(status int) { b.status = cmp.Or(b.status, status) }

// flushTo writes the buffered response to w, adding be's data to a JSON-RPC
// error response.
func (b *bufferedWriter) flushTo(w http.ResponseWriter, be *BackendError) {
	body := b.body.Bytes()
	if be != nil {
		var msg map[string]json.RawMessage
		if json.Unmarshal(body, &msg) == nil && msg["error"] != nil {
			var e map[string]any
			if json.Unmarshal(msg["error"], &e) == nil {
				e["data"] = be.Data()
				e["message"] = be.Error()
				if raw, err := json.Marshal(e); err == nil {
					msg["error"] = raw
					if out, err := json.Marshal(msg); err == nil {
						body = append(out, '\n')
					}
				}
			}
		}
	}
	maps.Copy(w.Header(), b.header)
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(cmp.Or(b.status, http.StatusOK))
	_, _ = w.Write(body)
}
