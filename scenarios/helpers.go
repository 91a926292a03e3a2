package scenarios

import (
	"context"
	"fmt"
	"time"

	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// Backend names used by the scenarios: alpha is the healthy bystander,
// beta the backend faults go into.
const (
	alpha = "alpha"
	beta  = "beta"
	gamma = "gamma"
)

// script is a small backend: tools echo and slow, a resource
// mem://<name>/readme and a prompt greet.
func script(name string, transport fakebackends.Transport) *fakebackends.Script {
	return &fakebackends.Script{
		Name: name, Transport: transport, Protocol: fakebackends.ProtocolAuto,
		Tools: []fakebackends.ToolSpec{
			{Name: "echo", Description: "Echo the arguments of " + name,
				Input: map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}},
			{Name: "slow", Description: "A slow tool of " + name, Result: fakebackends.ToolResult{Text: "done"}},
		},
		Resources: []fakebackends.ResourceSpec{{URI: readme(name), Name: "readme", Text: "hello from " + name}},
		Prompts:   []fakebackends.PromptSpec{{Name: "greet", Text: "Hello from " + name}},
	}
}

func readme(backend string) string { return "mem://" + backend + "/readme" }

// twoBackends is alpha (streamable HTTP) and beta on the variant's
// transport, both in-process.
func twoBackends(v Variant) []harness.BackendSpec {
	return []harness.BackendSpec{
		{Script: script(alpha, fakebackends.TransportStreamableHTTP)},
		{Script: script(beta, v.Transport)},
	}
}

// echoArgs are the arguments of an echo call.
func echoArgs(msg string) map[string]any { return map[string]any{"msg": msg} }

// tool names a backend's tool as the gateway exposes it (prefix
// "<backend>_", which every target's config template must configure).
func tool(backend, name string) string { return backend + "_" + name }

// client connects a client on rev, failing the scenario when it cannot.
func client(ctx context.Context, env *harness.Env, g gomega.Gomega, rev harness.Revision, opts ...harness.ClientOption) *harness.Client {
	c, err := env.Client(ctx, rev, opts...)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "connect a %s client", rev)
	return c
}

// must fails the scenario when err is not nil.
func must(g gomega.Gomega, err error, what string, args ...any) {
	g.ExpectWithOffset(1, err).NotTo(gomega.HaveOccurred(), fmt.Sprintf(what, args...))
}

// expectOK asserts a call succeeded.
func expectOK(g gomega.Gomega, call *harness.Call, why string) {
	g.ExpectWithOffset(1, call.Outcome).To(gomega.Equal(harness.OutcomeOK),
		"%s: %s %s ended %s: %s", why, call.Method, call.Target, call.Outcome, call.Text())
}

// expectFailed asserts a call ended with an error or an isError result
// (not a success, and not the client's own deadline: the gateway
// answered).
func expectFailed(g gomega.Gomega, call *harness.Call, why string) {
	g.ExpectWithOffset(1, call.Outcome).To(gomega.BeElementOf(harness.OutcomeBackendUnavailable, harness.OutcomeError, harness.OutcomeToolError),
		"%s: %s %s ended %s after %s: %s", why, call.Method, call.Target, call.Outcome, call.Took(), call.Text())
}

// ms converts a duration to float milliseconds for figures.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// waitUntil polls cond every 10 ms until it holds or d passes; it reports
// whether it held.
func waitUntil(ctx context.Context, d time.Duration, cond func() bool) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		if cond() {
			return true
		}
		select {
		case <-ctx.Done():
			return cond()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// countRequests counts the backend's logged requests of a JSON-RPC method.
func countRequests(ctx context.Context, env *harness.Env, backend, method string) (int, error) {
	reqs, err := env.Backend(backend).Requests(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, r := range reqs {
		if r.Method == method {
			n++
		}
	}
	return n, nil
}
