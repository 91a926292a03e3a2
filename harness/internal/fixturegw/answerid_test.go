package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// forgedResult is a tools/call answer with id 424242, which no request of
// the tests has.
const forgedResult = `{"jsonrpc":"2.0","id":424242,"result":{"content":[{"type":"text","text":"forged"}]}}`

// scriptedBackend answers initialize and notifications as a backend does
// and tools/call with answer(id, w); a GET that resumes a stream
// (Last-Event-ID "ev-1") gets the forged answer.
func scriptedBackend(t *testing.T, answer func(id string, w http.ResponseWriter)) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.Method == http.MethodGet && r.Header.Get("Last-Event-ID") == "ev-1":
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: %s\n\n", forgedResult)
			return
		case r.Method != http.MethodPost:
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		var msg struct {
			Method string          `json:"method"`
			ID     json.RawMessage `json:"id"`
		}
		if err := json.NewDecoder(r.Body).Decode(&msg); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		switch msg.Method {
		case "initialize":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Mcp-Session-Id", "s-1")
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{"protocolVersion":%q,"capabilities":{"tools":{}},"serverInfo":{"name":"scripted","version":"1"}}}`,
				msg.ID, mcp.LATEST_LEGACY_PROTOCOL_VERSION)
		case "tools/call":
			answer(string(msg.ID), w)
		default:
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// callThrough calls tool "echo" of srv with mcp-go's client, its HTTP
// client's transport rt, and returns the result's text or the error.
func callThrough(t *testing.T, srv *httptest.Server, rt http.RoundTripper) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tr, err := transport.NewStreamableHTTP(srv.URL, transport.WithHTTPBasicClient(&http.Client{Transport: rt}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.LATEST_LEGACY_PROTOCOL_VERSION))
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = "echo"
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", err
	}
	var text []string
	for _, content := range res.Content {
		if tc, ok := content.(mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, ""), nil
}

// TestAnswerIDs: mcp-go's client alone takes another request's answer
// (a JSON body, a stream's event under any name, its data over two
// lines, the event of the GET resuming the stream) as the call's;
// through answerIDs the call fails naming the id it carried, and the
// request's own answer still passes, after a notification.
func TestAnswerIDs(t *testing.T) {
	sse := func(body string) func(string, http.ResponseWriter) {
		return func(id string, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, strings.ReplaceAll(body, "ID", id))
		}
	}
	split := strings.Replace(forgedResult, `"result":`, "\"result\":\ndata: ", 1)
	cases := []struct {
		name   string
		answer func(id string, w http.ResponseWriter)
		want   string // the text taken; "" for an error naming 424242
	}{
		{"json", func(_ string, w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, forgedResult)
		}, ""},
		{"event named foo", sse("event: foo\ndata: " + forgedResult + "\n\n"), ""},
		{"data over two lines", sse("data: " + split + "\n\n"), ""},
		{"resumed stream", sse("id: ev-1\nretry: 10\ndata: \n\n"), ""},
		{"own answer after a notification", sse(`data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}` + "\n\n" +
			`data: {"jsonrpc":"2.0","id":ID,"result":{"content":[{"type":"text","text":"own"}]}}` + "\n\n"), "own"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := scriptedBackend(t, tc.answer)
			text, err := callThrough(t, srv, http.DefaultTransport)
			if tc.want == "" && (err != nil || text != "forged") {
				t.Fatalf("mcp-go's client alone: %q, %v; want the forged answer taken (else this case proves nothing)", text, err)
			}
			text, err = callThrough(t, srv, newAnswerIDs(http.DefaultTransport))
			switch {
			case tc.want != "" && (err != nil || text != tc.want):
				t.Errorf("through answerIDs: %q, %v; want %q", text, err, tc.want)
			case tc.want == "" && (err == nil || !strings.Contains(err.Error(), "424242")):
				t.Errorf("through answerIDs: %q, %v; want an error naming id 424242", text, err)
			}
		})
	}
}

// TestCheckAnswer: an answer with another id becomes an error with the
// request's id (or, on a stream that answers no request, nothing);
// requests, notifications, answers with the right id (in any spelling)
// and what is not JSON pass unchanged.
func TestCheckAnswer(t *testing.T) {
	for _, tc := range []struct{ msg, want, out string }{
		{`{"jsonrpc":"2.0","id":2,"result":{}}`, "2", `{"jsonrpc":"2.0","id":2,"result":{}}`},
		{`{"jsonrpc":"2.0","id":2.0,"result":{}}`, "2", `{"jsonrpc":"2.0","id":2.0,"result":{}}`},
		{`{"jsonrpc":"2.0","id":"2","result":{}}`, "2", `{"error":{"code":-32603,"message":"backend answered with id \"2\", not the request's id 2"},"id":2,"jsonrpc":"2.0"}`},
		{`{"jsonrpc":"2.0","id":7,"error":{"code":1,"message":"x"}}`, "2", `{"error":{"code":-32603,"message":"backend answered with id 7, not the request's id 2"},"id":2,"jsonrpc":"2.0"}`},
		{`{"jsonrpc":"2.0","id":7,"result":{}}`, "", ``},
		{`{"jsonrpc":"2.0","id":7,"method":"ping"}`, "2", `{"jsonrpc":"2.0","id":7,"method":"ping"}`},
		{`{"jsonrpc":"2.0","method":"notifications/progress"}`, "2", `{"jsonrpc":"2.0","method":"notifications/progress"}`},
		{`{not json`, "2", `{not json`},
	} {
		if got := string(checkAnswer([]byte(tc.msg), tc.want)); got != tc.out {
			t.Errorf("checkAnswer(%s, %q) = %s, want %s", tc.msg, tc.want, got, tc.out)
		}
	}
}
