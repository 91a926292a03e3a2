package scenarios

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/scenarios/kit"
)

// revisionsScenarios: every protocol revision the gateway advertises is
// served (issue 41). Each variant asks for its own revision (legacy:
// 2025-11-25, modern: 2026-07-28). The gateway advertises it when its
// server/discover answer lists it in supportedVersions, or when it agrees
// it to a client that asks for it; a client of an advertised revision
// must then initialize on it and call both backends' echo. A revision the
// gateway does not advertise (it negotiates every client down) is not
// applicable, with that evidence.
func revisionsScenarios() []Scenario {
	return variants("revisions", []Variant{
		{history.RevisionLegacy, fakebackends.TransportStreamableHTTP},
		{history.RevisionModern, fakebackends.TransportStreamableHTTP},
	}, func(v Variant) Scenario {
		return Scenario{
			Description: "a client of the variant's protocol revision, when the gateway advertises it (server/discover's supportedVersions, or initialize agreeing it), " +
				"initializes on that revision and calls both backends' echo",
			Labels:   []string{LabelRevisions},
			Timeout:  20 * time.Second,
			Topology: twoBackendsTopology(v, 2*time.Second, 10*time.Second),
			Run:      func(ctx context.Context, env *harness.Env, g gomega.Gomega) { runRevisions(ctx, env, g, v) },
		}
	})
}

// revisionAsked is the protocol revision a client of rev asks for.
func revisionAsked(rev history.Revision) string {
	if rev == history.RevisionLegacy {
		return mcp.LATEST_LEGACY_PROTOCOL_VERSION
	}
	return mcp.LATEST_PROTOCOL_VERSION
}

// revisionCheck is the check of the variant's revision.
func revisionCheck(asked string) string {
	return "the advertised revision " + asked + " is served: a client of it initializes and calls both backends' echo"
}

func runRevisions(ctx context.Context, env *harness.Env, g gomega.Gomega, v Variant) {
	k := kit.New(ctx, env, g)
	asked := revisionAsked(v.Revision)
	name := revisionCheck(asked)
	// The tools' names, learnt with a client of the other revision (this
	// one's may be refused: that is what is judged), or of this one when
	// the gateway refuses the other.
	other := history.RevisionModern
	if v.Revision == history.RevisionModern {
		other = history.RevisionLegacy
	}
	if probe, err := env.Client(ctx, other, history.WithClientName("names-probe")); err == nil {
		_ = probe.Close(ctx)
	} else {
		k.Note("a %s client was refused (%v): the tool names are learnt with a %s one", other, err, v.Revision)
		other = v.Revision
	}
	_ = k.Client(other, history.WithClientName("names")).Close(ctx)
	betaEcho, alphaEcho := k.Tool(beta, "echo"), k.Tool(alpha, "echo")

	listed, discovered := advertisedVersions(ctx, env)
	c, err := env.Client(ctx, v.Revision, history.WithClientName("revision-"+string(v.Revision)))
	agreed := ""
	if err == nil {
		agreed = c.ProtocolVersion()
	}
	inDiscover := slices.Contains(listed, asked)
	if agreed != asked && !inDiscover {
		what := "refused: " + fmt.Sprint(err)
		if err == nil {
			what = "agreed " + agreed
		}
		k.NotApplicable(name, fmt.Sprintf("the gateway does not advertise %s: server/discover %s, and a client asking for %s was %s", asked, discovered, asked, kit.Excerpt(what, 300)))
		if c != nil {
			_ = c.Close(ctx)
		}
		return
	}
	var calls []*history.Call
	if c != nil {
		calls = append(calls, c.CallTool(ctx, alphaEcho, echoArgs(asked)), c.CallTool(ctx, betaEcho, echoArgs(asked)))
		defer func() { _ = c.Close(context.WithoutCancel(ctx)) }()
	}
	k.Check(name, func(ck *kit.C) {
		ck.Evidence(calls...)
		ck.Expected("the gateway advertises %s (server/discover %s; a client asking for it was agreed %q), so a client of %s initializes on it and calls alpha's and beta's echo", asked, discovered, agreed, asked)
		ck.Expect(err).NotTo(gomega.HaveOccurred(), "a client asking for %s, which the gateway advertises (server/discover %s), connects", asked, discovered)
		ck.Expect(agreed).To(gomega.Equal(asked), "the revision agreed with a client asking for the advertised %s", asked)
		for _, call := range calls {
			kit.ExpectOK(ck, call)
		}
	})
}

// advertisedVersions asks the gateway's MCP endpoint server/discover (as
// a 2026-07-28 client does, the profile's MCP headers set) and returns
// the supportedVersions it lists, and what it answered, in words.
func advertisedVersions(ctx context.Context, env *harness.Env) ([]string, string) {
	ctx, cancel := context.WithTimeout(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": string(mcp.MethodServerDiscover), "params": map[string]any{
		"_meta": map[string]any{mcp.MetaKeyProtocolVersion: mcp.LATEST_PROTOCOL_VERSION, mcp.MetaKeyClientInfo: map[string]string{"name": "vmcp-chaos-harness", "version": "1"}, mcp.MetaKeyClientCapabilities: map[string]any{}},
	}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, env.Gateway().MCPURL(), bytes.NewReader(body))
	if err != nil {
		return nil, "could not be asked: " + err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", mcp.LATEST_PROTOCOL_VERSION)
	req.Header.Set("Mcp-Method", string(mcp.MethodServerDiscover)) // a 2026-07-28 POST names its method (SEP-2243)
	for k, v := range targets.HeadersOf(env.Target()).MCP {
		req.Header.Set(k, v)
	}
	resp, err := targets.AdminHTTP.Do(req)
	if err != nil {
		return nil, "could not be asked: " + err.Error()
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Sprintf("answered HTTP %d, its body unread: %v", resp.StatusCode, err)
	}
	msg := data
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		msg = nil
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() && msg == nil {
			if line, ok := strings.CutPrefix(sc.Text(), "data:"); ok {
				msg = []byte(strings.TrimSpace(line))
			}
		}
	}
	var answer struct {
		Result *struct {
			SupportedVersions []string `json:"supportedVersions"`
		} `json:"result"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	switch {
	case json.Unmarshal(msg, &answer) != nil:
		return nil, fmt.Sprintf("answered HTTP %d: %s", resp.StatusCode, kit.Excerpt(strings.TrimSpace(string(data)), 200))
	case answer.Error != nil:
		return nil, fmt.Sprintf("answered error %d %q", answer.Error.Code, kit.Excerpt(answer.Error.Message, 200))
	case answer.Result == nil:
		return nil, "answered neither a result nor an error"
	}
	return answer.Result.SupportedVersions, fmt.Sprintf("listed %q", answer.Result.SupportedVersions)
}
