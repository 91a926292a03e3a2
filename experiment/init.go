package experiment

import (
	"cmp"
	"context"
	_ "embed"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// InitOptions configure Starter.
type InitOptions struct {
	// Gateway is the gateway's MCP URL.
	Gateway string
	// AuthEnv names the environment variable of the gateway's bearer
	// token, if it needs one.
	AuthEnv string
	// Controls maps backend names to the control URLs of their proxies.
	Controls map[string]string
	// Protocol is the client revision (legacy or modern; default legacy).
	Protocol string
	// Timeout bounds the connection and tools/list (default 10 s).
	Timeout time.Duration
}

// Starter writes a starter experiment from a live gateway's tools/list:
// the tools grouped by backend (origin markers, else the prefix before the
// first "_"), a hypothesis that can fail (a tool of the first backend that
// init called and saw answer a result is listed and answers ok, within a
// bound made from the latency measured) and, when that backend has a
// control URL, a method that makes it fail and checks that the answered
// error names it. A gateway none of whose tools (of that backend) answers
// init's call is an error. The result parses with Parse.
func Starter(ctx context.Context, o InitOptions) (string, error) {
	o.Timeout = cmp.Or(o.Timeout, 10*time.Second)
	var headers map[string]string
	if o.AuthEnv != "" {
		tok := os.Getenv(o.AuthEnv)
		if tok == "" {
			return "", fmt.Errorf("environment variable %s is not set", o.AuthEnv)
		}
		headers = map[string]string{"Authorization": "Bearer " + tok}
	}
	dctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	c, err := history.Dial(dctx, o.Gateway, revisionOf(o.Protocol), nil, history.WithCallTimeout(o.Timeout), history.WithHeaders(headers))
	if err != nil {
		return "", fmt.Errorf("gateway %s: %w", o.Gateway, err)
	}
	defer closeClient(c)
	call := c.ListTools(dctx)
	if call.Err != nil {
		return "", fmt.Errorf("gateway %s: tools/list: %w", o.Gateway, call.Err)
	}
	byBackend := map[string][]string{}
	for _, t := range call.Tools.Tools {
		backend, _, ok := history.ParseOrigin(t.Description, history.MetaFields(t.Meta))
		if !ok {
			backend = guessBackend(t.Name, o.Controls)
		}
		byBackend[backend] = append(byBackend[backend], t.Name)
	}
	if len(byBackend) == 0 {
		return "", fmt.Errorf("gateway %s lists no tools: nothing to start from", o.Gateway)
	}
	names := slices.Sorted(maps.Keys(byBackend))
	for name := range o.Controls {
		if !slices.Contains(names, name) {
			return "", fmt.Errorf("--control %s: no tool of the gateway seems to come from backend %q (backends seen: %s)", name, name, strings.Join(names, ", "))
		}
	}
	target := names[0] // the first backend with a control URL, if any
	if i := slices.IndexFunc(names, func(n string) bool { return o.Controls[n] != "" }); i >= 0 {
		target = names[i]
	}
	called, err := findWorkingTool(ctx, c, toolsOf(call.Tools.Tools, byBackend[target]), o.Timeout)
	if err != nil {
		return "", fmt.Errorf("gateway %s, backend %s: %w", o.Gateway, target, err)
	}
	return render(o, names, byBackend, target, called)
}

// guessBackend names a tool's backend when it carries no origin marker: a
// backend given a control URL whose name prefixes the tool, else the part
// before the first "_" (the common {backend}_ prefix), else "unknown".
func guessBackend(tool string, controls map[string]string) string {
	for name := range controls {
		if strings.HasPrefix(tool, name+"_") || strings.HasPrefix(tool, name+".") {
			return name
		}
	}
	if i := strings.IndexAny(tool, "_."); i > 0 {
		return tool[:i]
	}
	return "unknown"
}

//go:embed starter.yaml.tmpl
var starterText string

var starterTemplate = template.Must(template.New("starter").Funcs(template.FuncMap{"q": strconv.Quote}).Parse(starterText))

// starterBackend is a backend of a starter experiment: its control URL
// ("" when not given) and its tools.
type starterBackend struct{ Name, Control, Tools string }

// render writes the starter experiment (starter.yaml.tmpl) for the
// backends names, target being the one the experiment acts on.
func render(o InitOptions, names []string, byBackend map[string][]string, target string, called calledTool) (string, error) {
	data := struct {
		InitOptions
		Now, Target, Tool, Args string
		Took, Within            time.Duration
		Backends                []starterBackend
		Controlled              bool // some backend has a control URL
	}{InitOptions: o, Now: time.Now().UTC().Format(time.RFC3339), Target: target, Tool: called.Name, Args: called.Args,
		Took: called.Took.Round(100 * time.Microsecond), Within: withinFor(called.Took)}
	for _, n := range names {
		data.Backends = append(data.Backends, starterBackend{n, o.Controls[n], clip(strings.Join(byBackend[n], ", "), 120)})
		data.Controlled = data.Controlled || o.Controls[n] != ""
	}
	var b strings.Builder
	err := starterTemplate.Execute(&b, data)
	return b.String(), err
}
