package faults

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestSSEStreamCutEventNeverGlued: a mid_body stall injects half an event
// into a shared session stream; the server's next event must not be glued
// to it: the cut event is completed first (it then fails to parse as its
// own event, and the next event stands alone).
func TestSSEStreamCutEventNeverGlued(t *testing.T) {
	rec := httptest.NewRecorder()
	var reg SSEStreams
	st, _ := reg.Open(context.Background(), rec)
	defer st.Close()
	_, _ = st.Write([]byte("event: endpoint\ndata: /message?sessionId=s1\n\n"))
	st.Inject([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":7,\"res"))
	_, _ = st.Write([]byte("event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":8,\"result\":{}}\n\n"))
	st.Inject([]byte("\n\n")) // the stall's release: harmless once completed
	events := strings.Split(strings.TrimRight(rec.Body.String(), "\n"), "\n\n")
	var datas []string
	for _, ev := range events {
		for _, line := range strings.Split(ev, "\n") {
			if d, ok := strings.CutPrefix(line, "data: "); ok {
				datas = append(datas, d)
			}
		}
	}
	want := []string{"/message?sessionId=s1", `{"jsonrpc":"2.0","id":7,"res`, `{"jsonrpc":"2.0","id":8,"result":{}}`}
	if strings.Join(datas, "|") != strings.Join(want, "|") {
		t.Fatalf("events' data %q, want %q (stream %q)", datas, want, rec.Body.String())
	}
}
