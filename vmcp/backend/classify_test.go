package backend

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
)

// TestClassifyConnectionFailures: how transport errors, as mcp-go and
// net/http wrap them, become the kind and cause a client sees.
func TestClassifyConnectionFailures(t *testing.T) {
	t.Parallel()
	post := func(err error) error {
		return fmt.Errorf("transport error: failed to send request: %w", &url.Error{Op: "Post", URL: "http://127.0.0.1:1/mcp", Err: err})
	}
	for _, tc := range []struct {
		name  string
		err   error
		kind  ErrorKind
		cause string
	}{
		// errServerClosedIdle is unexported; this is its text. Seen when a
		// backend's listener closed under a pooled keep-alive connection.
		{"server closed idle connection", post(errors.New("http: server closed idle connection")), KindConnectionClosed, "connection closed"},
		{"EOF", post(io.EOF), KindConnectionClosed, "connection closed"},
		{"reset", post(syscall.ECONNRESET), KindConnectionReset, "connection reset"},
		{"refused", post(syscall.ECONNREFUSED), KindConnectionRefused, "connection refused"},
		// A killed container leaves its network's DNS (measured: the
		// reference reported it as a raw transport_error before).
		{"no such host", post(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "beta", IsNotFound: true}}), KindUnreachable, "unreachable: no such host"},
		{"DNS timeout is not unreachable", post(&net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "i/o timeout", Name: "beta", IsTimeout: true}}), KindTransport,
			"transport error: failed to send request: Post \"http://127.0.0.1:1/mcp\": dial tcp: lookup beta: i/o timeout"},
		{"host unreachable", post(&net.OpError{Op: "dial", Net: "tcp", Err: syscall.EHOSTUNREACH}), KindUnreachable, "unreachable: no route to host"},
		{"unknown", post(errors.New("something else")), KindTransport, "transport error: failed to send request: Post \"http://127.0.0.1:1/mcp\": something else"},
	} {
		be := classify(failure{err: tc.err})
		if be.Kind != tc.kind || be.Cause != tc.cause {
			t.Errorf("%s: kind %q cause %q, want %q %q", tc.name, be.Kind, be.Cause, tc.kind, tc.cause)
		}
	}
}
