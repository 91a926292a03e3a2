package backend

import (
	"bufio"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestPeekPlain: peekPlain takes only a head it reads as net/http would,
// and leaves every other answer unread for http.ReadResponse.
func TestPeekPlain(t *testing.T) {
	t.Parallel()
	const id = "100000000000001"
	body := `{"jsonrpc":"2.0","id":100000000000001,"result":{"x":1}}`
	msg := func(head string) string {
		return head + fmt.Sprintf("Content-Length: %d\r\n\r\n", len(body)) + body + "NEXT"
	}
	take := map[string]bool{ // the answer → Connection: close
		msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: s\r\n"):                     false,
		msg("HTTP/1.1 201 Created\r\ncontent-type:application/json; charset=utf-8\r\n"):                       false,
		msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n"):                     true,
		msg("HTTP/1.1 200 OK\r\nDate: Thu, 26 Nov 2026 00:00:00 GMT\r\nContent-Type:  application/json \r\n"): false,
	}
	for in, wantClose := range take {
		br := bufio.NewReaderSize(strings.NewReader(in), rawBufferSize)
		result, status, closeAfter, ok, err := peekPlain(br, id, 1<<20)
		if !ok || err != nil || string(result) != `{"x":1}` || status/100 != 2 || closeAfter != wantClose {
			t.Errorf("%q: got %s %d close=%v ok=%v err=%v", in, result, status, closeAfter, ok, err)
			continue
		}
		if rest, _ := io.ReadAll(br); string(rest) != "NEXT" {
			t.Errorf("%q: left %q, want the next bytes", in, rest)
		}
	}
	leave := []string{
		msg("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n"),
		msg("HTTP/1.1 202 Accepted\r\nContent-Type: text/event-stream\r\n"),
		msg("HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\n"),
		msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n"),
		msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 3\r\n"),
		msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Type: application/json\r\n"),
		msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Folded: a\r\n b\r\n"),
		msg("HTTP/1.1 200 OK\r\nContent-Type : application/json\r\n"),
		msg("HTTP/1.1 200 OK\r\n"),
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n" + body,                        // no length
		"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n" + body, // cut short
		strings.Replace(msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"), "100000000000001", "100000000000002", 1),
	}
	for _, in := range leave {
		br := bufio.NewReaderSize(strings.NewReader(in), rawBufferSize)
		if result, _, _, ok, _ := peekPlain(br, id, 1<<20); ok {
			t.Errorf("%q: took %s", in, result)
			continue
		}
		if rest, _ := io.ReadAll(br); string(rest) != in {
			t.Errorf("%q: consumed part of it", in)
		}
	}
	big := msg("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n")
	br := bufio.NewReaderSize(strings.NewReader(big), rawBufferSize)
	if _, _, _, ok, _ := peekPlain(br, id, int64(len(body)-1)); ok {
		t.Error("took an answer larger than the limit")
	}
}
