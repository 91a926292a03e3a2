package backend

import (
	"context"
	"net/http"
	"sync/atomic"
)

// The hand-over from the direct forward (forwardhttp.go) to mcp-go's
// transport. An answer the direct forward does not take as it is (an SSE
// stream, an HTTP error status, a 404, a JSON body that is not a plain
// response to its request, a send that failed) is given to mcp-go's
// SendRequest for the very same request: its POST is not sent again, the
// captureTransport returns the answer already received instead. So every
// answer but the plain one goes through exactly the validators and the
// transport handling it went through before the direct forward existed.

// handover is one received answer (or send error) waiting for the
// captureTransport.
type handover struct {
	resp  *http.Response
	err   error
	taken atomic.Bool
}

type handoverKey struct{}

func withHandover(ctx context.Context, h *handover) context.Context {
	return context.WithValue(ctx, handoverKey{}, h)
}

// takeHandover returns the answer waiting for req, the first time a POST
// of its context asks (nil otherwise).
func takeHandover(req *http.Request) *handover {
	if req.Method != http.MethodPost {
		return nil
	}
	h, _ := req.Context().Value(handoverKey{}).(*handover)
	if h == nil || !h.taken.CompareAndSwap(false, true) {
		return nil
	}
	return h
}

// release closes the answer's body if nobody took it (mcp-go refused to
// send: its session had ended).
func (h *handover) release() {
	if h.taken.CompareAndSwap(false, true) && h.resp != nil {
		h.resp.Body.Close()
	}
}
