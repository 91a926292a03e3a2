package proxy

import (
	"bufio"
	"bytes"
	"io"
	"net/url"
)

// maxEndpointScan bounds how much of an SSE stream is scanned for the
// legacy endpoint event; after it (or after the endpoint event) the stream
// passes through untouched.
const maxEndpointScan = 64 << 10

// endpointRewriter passes an SSE stream through, rewriting the data of the
// first `endpoint` event (legacy SSE transport: the URL the client must
// POST to) when it is an absolute URL naming the upstream, so that the
// client's POSTs come back through the proxy. A relative endpoint is left
// as is: it already resolves against the proxy. Only whole lines are
// scanned until the endpoint event has passed; then bytes flow unchanged
// as they arrive.
type endpointRewriter struct {
	src      io.ReadCloser
	br       *bufio.Reader
	upstream *url.URL
	self     *url.URL
	pending  []byte
	event    string
	scanned  int
	done     bool
	// onEndpoint, if set, is told the endpoint URL the client will see.
	onEndpoint func(string)
}

func newEndpointRewriter(src io.ReadCloser, upstream, self *url.URL, onEndpoint func(string)) *endpointRewriter {
	return &endpointRewriter{src: src, br: bufio.NewReader(src), upstream: upstream, self: self, onEndpoint: onEndpoint}
}

// Read implements io.Reader.
func (e *endpointRewriter) Read(p []byte) (int, error) {
	if len(e.pending) > 0 {
		n := copy(p, e.pending)
		e.pending = e.pending[n:]
		return n, nil
	}
	if e.done {
		if e.br.Buffered() > 0 {
			return e.br.Read(p)
		}
		return e.src.Read(p)
	}
	line, err := e.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		err = nil // a long line: pass it on in pieces
	}
	e.scanned += len(line)
	e.pending = e.rewriteLine(line)
	if e.scanned > maxEndpointScan {
		e.done = true
	}
	n := copy(p, e.pending)
	e.pending = e.pending[n:]
	return n, err
}

// rewriteLine tracks the current event's type and rewrites the endpoint
// event's data line. It returns the bytes to pass on (a new slice: line
// belongs to the bufio.Reader).
func (e *endpointRewriter) rewriteLine(line []byte) []byte {
	body := bytes.TrimRight(line, "\r\n")
	switch {
	case len(body) == 0:
		if e.event == "endpoint" {
			e.done = true
		}
		e.event = ""
	case bytes.HasPrefix(body, []byte("event:")):
		e.event = string(bytes.TrimSpace(body[len("event:"):]))
	case e.event == "endpoint" && bytes.HasPrefix(body, []byte("data:")):
		raw := string(bytes.TrimPrefix(bytes.TrimPrefix(body, []byte("data:")), []byte(" ")))
		if u, err := url.Parse(raw); err == nil && u.IsAbs() && u.Host == e.upstream.Host {
			u.Scheme, u.Host = e.self.Scheme, e.self.Host
			raw = u.String()
			line = append([]byte("data: "+raw), line[len(body):]...)
		}
		if e.onEndpoint != nil {
			e.onEndpoint(raw)
		}
	}
	return bytes.Clone(line)
}

// Close implements io.Closer.
func (e *endpointRewriter) Close() error { return e.src.Close() }
