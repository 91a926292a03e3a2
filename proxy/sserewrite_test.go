package proxy

import (
	"io"
	"net/url"
	"strings"
	"testing"
	"testing/iotest"
)

func TestEndpointRewriter(t *testing.T) {
	t.Parallel()
	up, _ := url.Parse("http://10.0.0.1:9000/sse")
	self, _ := url.Parse("http://127.0.0.1:7000")
	cases := []struct{ in, want string }{
		{"event: endpoint\ndata: http://10.0.0.1:9000/message?sessionId=a\n\nevent: message\ndata: http://10.0.0.1:9000/x\n\n",
			"event: endpoint\ndata: http://127.0.0.1:7000/message?sessionId=a\n\nevent: message\ndata: http://10.0.0.1:9000/x\n\n"},
		{"event: endpoint\r\ndata: /message?sessionId=b\r\n\r\n", "event: endpoint\r\ndata: /message?sessionId=b\r\n\r\n"},
		{"event: endpoint\ndata: http://other:1/message\n\n", "event: endpoint\ndata: http://other:1/message\n\n"},
		{": comment\nevent: message\ndata: {\"x\":1}\n\nevent: endpoint\ndata:http://10.0.0.1:9000/m\n\npartial", ": comment\nevent: message\ndata: {\"x\":1}\n\nevent: endpoint\ndata: http://127.0.0.1:7000/m\n\npartial"},
	}
	for _, c := range cases {
		rw := newEndpointRewriter(io.NopCloser(iotest.OneByteReader(strings.NewReader(c.in))), up, self, nil)
		got, err := io.ReadAll(rw)
		if err != nil || string(got) != c.want {
			t.Errorf("rewrite(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}
