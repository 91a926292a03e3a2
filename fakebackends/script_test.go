package fakebackends

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"go.yaml.in/yaml/v3"
)

// scFullScript uses every field and every fault kind.
const scFullScript = `name: full
transport: sse
protocol: legacy
listen: 127.0.0.1:0
admin: 127.0.0.1:9999
seed: 99
tools:
  - name: echo
    description: Echo back
    input: {type: object, properties: {msg: {type: string}}, required: [msg]}
    result: echo
    delay: 5ms
  - name: text
    result: {text: hello}
    progress: 2
    progressInterval: 10ms
  - name: json
    result: {json: {a: 1, b: [true, null, 2.5, "x"], c: {d: -3}}}
resources:
  - {uri: "mem://full/readme", name: readme, mimeType: text/plain, text: hello}
resourceTemplates:
  - {uriTemplate: "mem://full/{id}", name: item, mimeType: text/plain, text: item}
prompts:
  - name: greet
    description: Greets
    arguments: [{name: who, description: Who, required: true}]
    text: Hello
faults:
  - {kind: crash, mode: reset, stage: after_headers, match: {method: tools/call, tool: "ec*"}, after: 1, count: 2}
  - {kind: crash, exit: true, exitCode: 3}
  - {kind: crash, mode: down, at: 1s, for: 2s}
  - kind: http_status
    status: 401
    body: {json: {jsonrpc: "2.0", id: null, error: {code: -32001, message: nope}}}
    headers: {WWW-Authenticate: 'Bearer realm="x"', Retry-After: "5"}
    match: {method: initialize}
  - {kind: http_status, status: 503, body: {raw: "not json"}}
  - {kind: stall, stage: after_progress, progress: 3, match: {tool: "slow*"}}
  - {kind: stall, stage: mid_body}
  - {kind: latency, delay: 100ms, jitter: 20ms, probability: 0.5, seed: 5}
  - {kind: jsonrpc_error, code: -32603, message: boom, match: {method: resources/read}}
  - {kind: tool_error, text: failed, match: {method: tools/call, tool: text}}
  - {kind: malformed, variant: oversized, size: 2MiB}
  - {kind: malformed, variant: wrong_id}
  - {kind: session_expire, at: 3s}
  - kind: flap
    on: 1s
    off: 500ms
    match: {method: tools/call}
    count: 10
    fault: {kind: crash, mode: eof}
`

func scMustParse(t *testing.T, src, file string) *Script {
	t.Helper()
	s, err := ParseScript([]byte(src), file)
	if err != nil {
		t.Fatalf("ParseScript(%s): %v", file, err)
	}
	return s
}

func crashP(f Fault) *faults.Crash       { return f.Params.(*faults.Crash) }
func statusP(f Fault) *faults.HTTPStatus { return f.Params.(*faults.HTTPStatus) }
func stallP(f Fault) *faults.Stall       { return f.Params.(*faults.Stall) }

// scClearLines zeroes Fault.Line, which depends on the input's layout.
func scClearLines(faults []Fault) {
	for i := range faults {
		faults[i].Line = 0
		faults[i].Effective().Line = 0
	}
}

func TestScriptFullParse(t *testing.T) {
	t.Parallel()
	s := scMustParse(t, scFullScript, "full.yaml")
	if s.Name != "full" || s.Transport != TransportSSE || s.Protocol != ProtocolLegacy || s.Admin != "127.0.0.1:9999" || s.Seed != 99 {
		t.Errorf("header fields: %+v", s)
	}
	if len(s.Tools) != 3 || !s.Tools[0].Result.Echo || s.Tools[0].Delay.D() != 5*time.Millisecond {
		t.Errorf("tools[0]: %+v", s.Tools[0])
	}
	if s.Tools[1].Result.Text != "hello" || s.Tools[1].Progress != 2 || s.Tools[1].ProgressInterval.D() != 10*time.Millisecond {
		t.Errorf("tools[1]: %+v", s.Tools[1])
	}
	wantJSON := map[string]any{"a": int64(1), "b": []any{true, nil, 2.5, "x"}, "c": map[string]any{"d": int64(-3)}}
	if !reflect.DeepEqual(s.Tools[2].Result.JSON, wantJSON) {
		t.Errorf("tools[2].result.json = %#v", s.Tools[2].Result.JSON)
	}
	if !reflect.DeepEqual(s.Tools[1].Input, map[string]any{"type": "object"}) {
		t.Errorf("default input = %#v", s.Tools[1].Input)
	}
	if len(s.Faults) != 14 {
		t.Fatalf("%d faults", len(s.Faults))
	}
	f := s.Faults
	if f[0].Line != 29 || f[3].Line != 32 || f[13].Line != 46 {
		t.Errorf("fault lines = %d, %d, %d; want 29, 32, 46", f[0].Line, f[3].Line, f[13].Line)
	}
	if f[0].Match.Tool != "ec*" || f[0].After != 1 || f[0].Count != 2 || crashP(f[0]).Mode != faults.CrashReset || crashP(f[0]).Stage != faults.StageAfterHeaders {
		t.Errorf("faults[0] = %+v", f[0])
	}
	if !crashP(f[1]).Exit || crashP(f[1]).ExitCode != 3 || crashP(f[1]).Mode != faults.CrashEOF || crashP(f[1]).Stage != faults.StageBeforeHeaders {
		t.Errorf("faults[1] = %+v", f[1])
	}
	if crashP(f[2]).Mode != faults.CrashDown || crashP(f[2]).Stage != "" || f[2].At.D() != time.Second || f[2].For.D() != 2*time.Second {
		t.Errorf("faults[2] = %+v", f[2])
	}
	if statusP(f[3]).Headers["Retry-After"] != "5" || statusP(f[3]).Body == nil || statusP(f[3]).Body.JSON == nil {
		t.Errorf("faults[3] = %+v", f[3])
	}
	if statusP(f[4]).Body.Raw != "not json" {
		t.Errorf("faults[4] = %+v", f[4])
	}
	if f[7].Probability == nil || *f[7].Probability != 0.5 || f[7].Params.(*faults.Latency).Jitter.D() != 20*time.Millisecond || f[7].Seed != 5 {
		t.Errorf("faults[7] = %+v", f[7])
	}
	if f[10].Params.(*faults.Malformed).Size != 2<<20 {
		t.Errorf("faults[10].size = %d", f[10].Params.(*faults.Malformed).Size)
	}
	if n := f[13].Effective(); n == &f[13] || n.Kind != faults.KindCrash || crashP(*n).Stage != faults.StageBeforeHeaders || n.Line != 51 {
		t.Errorf("faults[13].fault = %+v", n)
	}
}

// TestScriptRoundTrip: a parsed script marshals to YAML and to JSON, and
// both parse back to the same script.
func TestScriptRoundTrip(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("examples/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	srcs := map[string]string{"full.yaml": scFullScript}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		srcs[f] = string(b)
	}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			want := scMustParse(t, src, name)
			scClearLines(want.Faults)
			y, err := yaml.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			fromYAML := scMustParse(t, string(y), "marshalled.yaml")
			scClearLines(fromYAML.Faults)
			if !reflect.DeepEqual(fromYAML, want) {
				t.Errorf("YAML round trip differs:\n%s", y)
			}
			j, err := json.Marshal(want)
			if err != nil {
				t.Fatal(err)
			}
			fromJSON := scMustParse(t, string(j), "marshalled.json")
			scClearLines(fromJSON.Faults)
			if !reflect.DeepEqual(fromJSON, want) {
				t.Errorf("JSON round trip differs:\n%s", j)
			}
		})
	}
}

// TestScriptFaultsJSONRoundTrip: GET /faults output (JSON) parses back with
// ParseFaults to the same faults, in both the list and the object form.
func TestScriptFaultsJSONRoundTrip(t *testing.T) {
	t.Parallel()
	want := scMustParse(t, scFullScript, "full.yaml").Faults
	scClearLines(want)
	list, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := json.Marshal(map[string]any{"faults": want})
	if err != nil {
		t.Fatal(err)
	}
	for _, data := range [][]byte{list, obj} {
		got, err := ParseFaults(data, "PUT /faults")
		if err != nil {
			t.Fatalf("ParseFaults(%s): %v", data, err)
		}
		scClearLines(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("round trip differs:\n got %+v\nwant %+v", got, want)
		}
	}
}

func TestScriptExamplesParse(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir("examples")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no examples")
	}
	names := map[string]bool{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		path := filepath.Join("examples", e.Name())
		s, err := LoadScript(path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		names[e.Name()] = true
		if err := s.Validate(); err != nil {
			t.Errorf("%s: Validate after parse: %v", path, err)
		}
	}
	for _, want := range []string{"beta.yaml", "healthy.yaml", "flaky.yaml", "stdio.yaml"} {
		if !names[want] {
			t.Errorf("examples/%s missing or invalid", want)
		}
	}
}

func TestScriptBetaExample(t *testing.T) {
	t.Parallel()
	s, err := LoadScript("examples/beta.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if s.Protocol != ProtocolLegacy || len(s.Faults) != 2 {
		t.Fatalf("beta: %+v", s)
	}
	f := s.Faults[0]
	if f.Kind != faults.KindHTTPStatus || statusP(f).Status != 403 || f.After != 2 || f.Match != (Match{Method: "tools/call", Tool: "echo"}) || statusP(f).Body.Text != "Forbidden" {
		t.Errorf("faults[0] = %+v", f)
	}
	if f := s.Faults[1]; f.Kind != faults.KindStall || stallP(f).Stage != faults.StageAfterHeaders || f.Match.Tool != "slow" {
		t.Errorf("faults[1] = %+v", f)
	}
}

func TestScriptDefaults(t *testing.T) {
	t.Parallel()
	s := scMustParse(t, `
name: d
tools: [{name: t}]
faults:
  - kind: crash
  - kind: crash
    exit: true
  - kind: crash
    mode: down
  - kind: stall
  - kind: stall
    stage: after_progress
  - kind: flap
    on: 1s
    off: 1s
    fault: {kind: stall}
`, "d.yaml")
	if s.Transport != TransportStreamableHTTP || s.Protocol != ProtocolAuto || s.Listen != "127.0.0.1:0" || s.Admin != "127.0.0.1:0" || s.Seed != 1 {
		t.Errorf("script defaults: %+v", s)
	}
	if !s.Tools[0].Result.Echo || !reflect.DeepEqual(s.Tools[0].Input, map[string]any{"type": "object"}) {
		t.Errorf("tool defaults: %+v", s.Tools[0])
	}
	f := s.Faults
	if crashP(f[0]).Mode != faults.CrashEOF || crashP(f[0]).Stage != faults.StageBeforeHeaders || crashP(f[0]).ExitCode != 0 {
		t.Errorf("crash defaults: %+v", f[0])
	}
	if crashP(f[1]).ExitCode != 1 {
		t.Errorf("crash exit defaults: %+v", f[1])
	}
	if crashP(f[2]).Stage != "" {
		t.Errorf("crash down has a stage: %+v", f[2])
	}
	if stallP(f[3]).Stage != faults.StageBeforeHeaders || stallP(f[3]).Progress != 0 {
		t.Errorf("stall defaults: %+v", f[3])
	}
	if stallP(f[4]).Progress != 1 {
		t.Errorf("after_progress default progress: %+v", f[4])
	}
	if stallP(*f[5].Effective()).Stage != faults.StageBeforeHeaders {
		t.Errorf("flap nested defaults: %+v", f[5].Effective())
	}
	// ApplyDefaults is idempotent and Validate accepts both forms.
	again := *s
	again.ApplyDefaults()
	if !reflect.DeepEqual(&again, s) {
		t.Error("ApplyDefaults is not idempotent")
	}
	raw := &Script{Name: "raw", Tools: []ToolSpec{{Name: "t"}}, Faults: []Fault{{Kind: faults.KindStall}}}
	if err := raw.Validate(); err != nil {
		t.Errorf("Validate without defaults: %v", err)
	}
}

type scErrCase struct {
	name  string
	src   string
	line  int
	field string
	msg   string // substring of Msg
}

// scHead is prepended to fault-level cases; faults start on line 4.
const scHead = "name: x\ntools: [{name: echo}, {name: slow}]\nfaults:\n"

var scErrCases = []scErrCase{
	// document level
	{"empty", "", 0, "", "empty document"},
	{"comment only", "# nothing\n", 0, "", "empty document"},
	{"null document", "~\n", 1, "", "empty document"},
	{"two documents", "name: a\n---\nname: b\n", 3, "", "multiple YAML documents"},
	{"syntax", "name: a\ntools: [\n", 2, "", "did not find expected node content"},
	{"not a mapping", "- a\n- b\n", 1, "", "a script must be a mapping"},
	{"scalar document", "hello\n", 1, "", "a script must be a mapping"},
	// strict decoding
	{"unknown top key", "name: a\ntoolz: []\n", 2, "toolz", `unknown field "toolz"`},
	{"duplicate key", "name: a\nname: b\n", 2, "name", "duplicate key (first at line 1)"},
	{"merge key", "base: &b {name: a}\n", 1, "base", "unknown field"},
	{"merge key used", "name: a\ntools:\n  - <<: {name: a}\n", 3, "tools[0]", "merge keys"},
	{"tools not a list", "name: a\ntools: {name: a}\n", 2, "tools", "want a list, got a mapping"},
	{"name not a string", "name: [a]\n", 1, "name", "want a string, got a list"},
	{"seed not an int", "name: a\nseed: lots\n", 2, "seed", `want an integer, got the string "lots"`},
	{"seed float", "name: a\nseed: 1.5\n", 2, "seed", "want an integer"},
	{"unknown tool key", "name: a\ntools:\n  - name: echo\n    inputs: {}\n", 4, "tools[0].inputs", `unknown field "inputs"`},
	{"bad tool delay", "name: a\ntools:\n  - name: echo\n    delay: 5 sec\n", 4, "tools[0].delay", `bad duration "5 sec"`},
	{"tool delay without unit", "name: a\ntools:\n  - name: echo\n    delay: 5\n", 4, "tools[0].delay", "a number needs a unit"},
	{"negative delay", "name: a\ntools:\n  - name: echo\n    delay: -5ms\n", 4, "tools[0].delay", "negative duration"},
	{"bad result scalar", "name: a\ntools:\n  - name: echo\n    result: mirror\n", 4, "tools[0].result", `want echo, {text: "..."} or {json: ...}`},
	{"result both", "name: a\ntools:\n  - name: echo\n    result: {text: a, json: 1}\n", 4, "tools[0].result", "exactly one of text, json"},
	{"result empty map", "name: a\ntools:\n  - name: echo\n    result: {}\n", 4, "tools[0].result", "exactly one of text, json"},
	{"result unknown key", "name: a\ntools:\n  - name: echo\n    result: {txt: a}\n", 4, "tools[0].result.txt", `unknown field "txt"`},
	{"result empty text", "name: a\ntools:\n  - name: echo\n    result: {text: \"\"}\n", 4, "tools[0].result.text", "must not be empty"},
	{"result json nan", "name: a\ntools:\n  - name: echo\n    result:\n      json: {x: .nan}\n", 5, "tools[0].result.json.x", "not representable in JSON"},
	{"input not object", "name: a\ntools:\n  - name: echo\n    input: {type: string}\n", 4, "tools[0].input.type", "type: object"},
	{"alias cycle", "name: a\ntools:\n  - name: echo\n    input: &a {type: object, p: *a}\n", 4, "tools[0].input.p", "refers to a value that contains it"},
	// script validation
	{"no name", "tools: []\n", 1, "name", "required"},
	{"bad transport", "name: a\ntransport: http\n", 2, "transport", `unknown transport "http" (want streamable-http, sse, stdio)`},
	{"bad protocol", "name: a\nprotocol: new\n", 2, "protocol", `unknown protocol "new"`},
	{"sse modern", "name: a\ntransport: sse\nprotocol: modern\n", 3, "protocol", "protocol modern (2026-07-28) is served over streamable-http only; transport sse serves legacy"},
	{"stdio modern", "name: a\nprotocol: modern\ntransport: stdio\n", 2, "protocol", "transport stdio serves legacy"},
	{"bad listen", "name: a\nlisten: localhost\n", 2, "listen", "want host:port"},
	{"tool without name", "name: a\ntools:\n  - description: x\n", 3, "tools[0].name", "required"},
	{"duplicate tool", "name: a\ntools:\n  - name: echo\n  - name: echo\n", 4, "tools[1].name", `duplicate tool name "echo"`},
	{"duplicate resource", "name: a\nresources:\n  - uri: mem://a\n  - uri: mem://a\n", 4, "resources[1].uri", "duplicate resource URI"},
	{"resource without uri", "name: a\nresources:\n  - text: a\n", 3, "resources[0].uri", "required"},
	{"duplicate template", "name: a\nresourceTemplates:\n  - uriTemplate: a/{x}\n  - uriTemplate: a/{x}\n", 4, "resourceTemplates[1].uriTemplate", "duplicate resource template"},
	{"duplicate prompt", "name: a\nprompts:\n  - name: p\n  - name: p\n", 4, "prompts[1].name", "duplicate prompt name"},
	{"prompt arg without name", "name: a\nprompts:\n  - name: p\n    arguments: [{description: d}]\n", 4, "prompts[0].arguments[0].name", "required"},
	// faults: kinds
	{"no kind", scHead + "  - status: 403\n", 4, "faults[0].kind", "required (want crash, http_status, stall"},
	{"unknown kind", scHead + "  - kind: explode\n", 4, "faults[0].kind", `unknown fault kind "explode"`},
	{"unknown fault key", scHead + "  - kind: stall\n    stauts: 403\n", 5, "faults[0].stauts", `unknown field "stauts"`},
	{"param of other kind", scHead + "  - kind: stall\n    status: 403\n", 5, "faults[0].status", "status does not apply to kind stall (stall takes stage, progress)"},
	{"param of no-param kind", scHead + "  - kind: session_expire\n    text: x\n", 5, "faults[0].text", "session_expire takes no parameters"},
	{"exit on stall", scHead + "  - kind: stall\n    exit: true\n", 5, "faults[0].exit", "does not apply to kind stall"},
	{"bad stall stage", scHead + "  - kind: latency\n    delay: 1s\n  - kind: stall\n    stage: sideways\n", 7, "faults[1].stage", `unknown stall stage "sideways" (want before_headers, after_headers, after_progress, mid_body)`},
	{"progress wrong stage", scHead + "  - kind: stall\n    stage: mid_body\n    progress: 2\n", 6, "faults[0].progress", "only to stage after_progress"},
	{"progress negative", scHead + "  - kind: stall\n    stage: after_progress\n    progress: -1\n", 6, "faults[0].progress", "at least 1"},
	{"bad crash mode", scHead + "  - kind: crash\n    mode: boom\n", 5, "faults[0].mode", `unknown crash mode "boom" (want eof, reset, down)`},
	{"crash stall stage", scHead + "  - kind: crash\n    stage: mid_body\n", 5, "faults[0].stage", "applies only to stall"},
	{"down with match", scHead + "  - kind: crash\n    mode: down\n    match: {method: ping}\n", 6, "faults[0].match", "mode down takes no match"},
	{"down with after", scHead + "  - kind: crash\n    mode: down\n    after: 1\n", 6, "faults[0].after", "schedule-only"},
	{"down with probability", scHead + "  - kind: crash\n    mode: down\n    probability: 0.5\n", 6, "faults[0].probability", "schedule-only"},
	{"down with stage", scHead + "  - kind: crash\n    mode: down\n    stage: after_headers\n", 6, "faults[0].stage", "does not apply to mode down"},
	{"exitCode without exit", scHead + "  - kind: crash\n    exitCode: 2\n", 5, "faults[0].exitCode", "requires exit: true"},
	{"exitCode range", scHead + "  - kind: crash\n    exit: true\n    exitCode: 300\n", 6, "faults[0].exitCode", "out of range"},
	{"status missing", scHead + "  - kind: http_status\n", 4, "faults[0].status", "required"},
	{"status range", scHead + "  - kind: http_status\n    status: 700\n", 5, "faults[0].status", "out of range (want 100..599)"},
	{"status string", scHead + "  - kind: http_status\n    status: forbidden\n", 5, "faults[0].status", "want an integer"},
	{"body two", scHead + "  - kind: http_status\n    status: 500\n    body: {text: a, raw: b}\n", 6, "faults[0].body", "exactly one of text, json, raw"},
	{"body empty", scHead + "  - kind: http_status\n    status: 500\n    body: {}\n", 6, "faults[0].body", "exactly one of text, json, raw"},
	{"body unknown", scHead + "  - kind: http_status\n    status: 500\n    body: {html: x}\n", 6, "faults[0].body.html", `unknown field "html"`},
	{"bad header name", scHead + "  - kind: http_status\n    status: 500\n    headers:\n      \"Bad Header\": x\n", 7, `faults[0].headers["Bad Header"]`, "invalid header name"},
	{"header not string", scHead + "  - kind: http_status\n    status: 500\n    headers:\n      X-A: [1]\n", 7, "faults[0].headers.X-A", "want a string"},
	{"latency no delay", scHead + "  - kind: latency\n    jitter: 5ms\n", 4, "faults[0].delay", "required"},
	{"latency bad jitter", scHead + "  - kind: latency\n    delay: 5ms\n    jitter: lots\n", 6, "faults[0].jitter", `bad duration "lots"`},
	{"jsonrpc no code", scHead + "  - kind: jsonrpc_error\n    message: m\n", 4, "faults[0].code", "required"},
	{"jsonrpc no message", scHead + "  - kind: jsonrpc_error\n    code: -1\n", 4, "faults[0].message", "required"},
	{"tool_error no text", scHead + "  - kind: tool_error\n", 4, "faults[0].text", "required"},
	{"tool_error method", scHead + "  - kind: tool_error\n    text: t\n    match: {method: tools/list}\n", 6, "faults[0].match.method", "applies only to tools/call"},
	{"malformed no variant", scHead + "  - kind: malformed\n", 4, "faults[0].variant", "required (want invalid_json, wrong_id, truncated_sse, oversized, wrong_id_event, wrong_id_resumed, accepted, empty_body, unanswered_sse, no_result)"},
	{"malformed bad variant", scHead + "  - kind: malformed\n    variant: weird\n", 5, "faults[0].variant", `unknown malformed variant "weird"`},
	{"oversized no size", scHead + "  - kind: malformed\n    variant: oversized\n", 4, "faults[0].size", "required for variant oversized"},
	{"size on other variant", scHead + "  - kind: malformed\n    variant: wrong_id\n    size: 10KB\n", 6, "faults[0].size", "only to variant oversized"},
	{"bad size", scHead + "  - kind: malformed\n    variant: oversized\n    size: 2 parsecs\n", 6, "faults[0].size", "bad size unit"},
	{"negative size", scHead + "  - kind: malformed\n    variant: oversized\n    size: -1\n", 6, "faults[0].size", "negative size"},
	{"flap no on", scHead + "  - kind: flap\n    off: 1s\n    fault: {kind: stall}\n", 4, "faults[0].on", "required"},
	{"flap no fault", scHead + "  - kind: flap\n    on: 1s\n    off: 1s\n", 4, "faults[0].fault", "required"},
	{"flap of flap", scHead + "  - kind: flap\n    on: 1s\n    off: 1s\n    fault:\n      kind: flap\n", 8, "faults[0].fault.kind", "cannot contain another flap"},
	{"flap nested invalid", scHead + "  - kind: flap\n    on: 1s\n    off: 1s\n    fault:\n      kind: stall\n      stage: never\n", 9, "faults[0].fault.stage", `unknown stall stage "never"`},
	{"flap nested schedule", scHead + "  - kind: flap\n    on: 1s\n    off: 1s\n    fault:\n      kind: stall\n      after: 3\n", 9, "faults[0].fault.after", "belongs on the flap"},
	// faults: match and schedule
	{"unknown method", scHead + "  - kind: stall\n    match:\n      method: tools/cal\n", 6, "faults[0].match.method", `unknown method "tools/cal" (want initialize, notifications/initialized, ping, tools/list`},
	{"unknown match key", scHead + "  - kind: stall\n    match: {prompt: x}\n", 5, "faults[0].match.prompt", `unknown field "prompt" (want one of method, tool)`},
	{"bad glob", scHead + "  - kind: stall\n    match: {tool: \"ec[ho\"}\n", 5, "faults[0].match.tool", "bad glob"},
	{"probability range", scHead + "  - kind: stall\n    probability: 1.5\n", 5, "faults[0].probability", "between 0 and 1"},
	{"probability string", scHead + "  - kind: stall\n    probability: often\n", 5, "faults[0].probability", "want a number"},
	{"probability inf", scHead + "  - kind: stall\n    probability: .inf\n", 5, "faults[0].probability", "finite"},
	{"negative after", scHead + "  - kind: stall\n    after: -1\n", 5, "faults[0].after", "must not be negative"},
	{"negative count", scHead + "  - kind: stall\n    count: -2\n", 5, "faults[0].count", "must not be negative"},
	{"bad at", scHead + "  - kind: stall\n    at: soon\n", 5, "faults[0].at", `bad duration "soon"`},
	{"negative for", scHead + "  - kind: stall\n    for: -1s\n", 5, "faults[0].for", "negative duration"},
	{"after overflow", scHead + "  - kind: stall\n    after: 99999999999999999999\n", 5, "faults[0].after", "want an integer"},
	// stdio
	{"stdio http_status", "name: x\ntransport: stdio\nfaults:\n  - kind: http_status\n    status: 403\n", 4, "faults[0].kind", "http_status does not apply to stdio"},
	{"sse accepted", "name: x\ntransport: sse\nfaults:\n  - kind: malformed\n    variant: accepted\n", 5, "faults[0].variant", "variant accepted applies to streamable-http only, not sse"},
	{"stdio unanswered_sse", "name: x\ntransport: stdio\nfaults:\n  - kind: malformed\n    variant: unanswered_sse\n", 5, "faults[0].variant", "variant unanswered_sse applies to streamable-http only, not stdio"},
	{"stdio crash after_headers", "name: x\ntransport: stdio\nfaults:\n  - kind: crash\n    stage: after_headers\n", 5, "faults[0].stage", "after_headers does not apply to stdio"},
}

func TestScriptErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range scErrCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := ParseScript([]byte(tc.src), "bad.yaml")
			if err == nil {
				t.Fatalf("no error; parsed %+v", s)
			}
			if s != nil {
				t.Errorf("non-nil script with error")
			}
			var se *ScriptError
			if !errors.As(err, &se) {
				t.Fatalf("error %T is not a *ScriptError: %v", err, err)
			}
			if se.File != "bad.yaml" || se.Line != tc.line || se.Field != tc.field || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("got  %q (line %d, field %q)\nwant line %d, field %q, msg containing %q", err, se.Line, se.Field, tc.line, tc.field, tc.msg)
			}
			// The text is file:line: field: msg.
			want := "bad.yaml"
			if tc.line > 0 {
				want += ":" + itoa(tc.line)
			}
			want += ": "
			if tc.field != "" {
				want += tc.field + ": "
			}
			if !strings.HasPrefix(err.Error(), want) {
				t.Errorf("Error() = %q, want prefix %q", err, want)
			}
		})
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestScriptErrorFormat(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		e    ScriptError
		want string
	}{
		{ScriptError{File: "beta.yaml", Line: 12, Field: "faults[1].stage", Msg: "bad"}, "beta.yaml:12: faults[1].stage: bad"},
		{ScriptError{File: "beta.yaml", Line: 3, Msg: "syntax"}, "beta.yaml:3: syntax"},
		{ScriptError{File: "beta.yaml", Msg: "empty"}, "beta.yaml: empty"},
		{ScriptError{Line: 4, Field: "f", Msg: "m"}, "line 4: f: m"},
		{ScriptError{Field: "f", Msg: "m"}, "f: m"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("Error() = %q, want %q", got, tc.want)
		}
	}
}

func TestScriptLoadMissingFile(t *testing.T) {
	t.Parallel()
	_, err := LoadScript("examples/does-not-exist.yaml")
	var se *ScriptError
	if !errors.As(err, &se) || se.File != "examples/does-not-exist.yaml" || !strings.Contains(se.Msg, "no such file") {
		t.Fatalf("LoadScript: %v", err)
	}
}

func TestScriptJSONInput(t *testing.T) {
	t.Parallel()
	src := `{
  "name": "j",
  "tools": [{"name": "echo", "result": "echo", "delay": "5ms"}],
  "faults": [
    {"kind": "http_status", "status": 403, "match": {"method": "tools/call"}, "after": 2},
    {"kind": "stall", "stage": "upside"}
  ]
}`
	_, err := ParseScript([]byte(src), "j.json")
	var se *ScriptError
	if !errors.As(err, &se) || se.Line != 6 || se.Field != "faults[1].stage" {
		t.Fatalf("got %v, want j.json:6: faults[1].stage", err)
	}
	s := scMustParse(t, strings.Replace(src, "upside", "mid_body", 1), "j.json")
	if statusP(s.Faults[0]).Status != 403 || s.Faults[0].After != 2 || s.Tools[0].Delay.D() != 5*time.Millisecond {
		t.Errorf("parsed %+v", s)
	}
}

func TestScriptParseFaults(t *testing.T) {
	t.Parallel()
	listYAML := "- kind: http_status\n  status: 403\n  match: {method: tools/call}\n- {kind: stall}\n"
	objYAML := "faults:\n  - kind: http_status\n    status: 403\n    match: {method: tools/call}\n  - {kind: stall}\n"
	listJSON := `[{"kind":"http_status","status":403,"match":{"method":"tools/call"}},{"kind":"stall"}]`
	objJSON := `{"faults":[{"kind":"http_status","status":403,"match":{"method":"tools/call"}},{"kind":"stall"}]}`
	want := []Fault{
		{Kind: faults.KindHTTPStatus, Match: Match{Method: "tools/call"}, Params: &faults.HTTPStatus{Status: 403}},
		{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageBeforeHeaders}},
	}
	for _, src := range []string{listYAML, objYAML, listJSON, objJSON} {
		got, err := ParseFaults([]byte(src), "PUT /faults")
		if err != nil {
			t.Fatalf("ParseFaults(%q): %v", src, err)
		}
		if got[0].Line == 0 {
			t.Errorf("ParseFaults(%q): no line recorded", src)
		}
		scClearLines(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("ParseFaults(%q) = %+v", src, got)
		}
	}
	for _, src := range []string{"[]", "faults: []", "{}", `{"faults": null}`} {
		got, err := ParseFaults([]byte(src), "PUT /faults")
		if err != nil || got == nil || len(got) != 0 {
			t.Errorf("ParseFaults(%q) = %v, %v; want empty non-nil", src, got, err)
		}
	}
	for _, tc := range []struct {
		src, field, msg string
		line            int
	}{
		{"", "", "empty document", 0},
		{"403", "", "want a list of faults", 1},
		{"{fault: []}", "fault", `unknown field "fault" (want one of faults)`, 1},
		{"- kind: stall\n- kind: latency\n  delay: 1s\n  status: 1\n", "faults[1].status", "does not apply to kind latency", 4},
		{`[{"kind": "stall"}, {"kind": "stall", "match": {"method": "nope"}}]`, "faults[1].match.method", "unknown method", 1},
		{"faults:\n  - kind: crash\n    mode: sideways\n", "faults[0].mode", "unknown crash mode", 3},
		{"- kind: a\n---\n- kind: b\n", "", "multiple YAML documents", 3},
	} {
		_, err := ParseFaults([]byte(tc.src), "PUT /faults")
		var se *ScriptError
		if !errors.As(err, &se) {
			t.Errorf("ParseFaults(%q): error %v is not a *ScriptError", tc.src, err)
			continue
		}
		if se.File != "PUT /faults" || se.Field != tc.field || se.Line != tc.line || !strings.Contains(se.Msg, tc.msg) {
			t.Errorf("ParseFaults(%q) = %q; want line %d field %q msg %q", tc.src, err, tc.line, tc.field, tc.msg)
		}
	}
	// Transport rules are left to the runtime.
	if _, err := ParseFaults([]byte("- {kind: http_status, status: 500}"), "PUT /faults"); err != nil {
		t.Errorf("http_status: %v", err)
	}
}

func TestScriptValidateFault(t *testing.T) {
	t.Parallel()
	f := &Fault{Kind: faults.KindHTTPStatus, Line: 7, Params: &faults.HTTPStatus{Status: 403}}
	if err := ValidateFault(f, "faults[0]", TransportStreamableHTTP); err != nil {
		t.Errorf("http: %v", err)
	}
	err := ValidateFault(f, "faults[0]", TransportStdio)
	var se *ScriptError
	if !errors.As(err, &se) || se.Line != 7 || se.Field != "faults[0].kind" || se.Error() != "line 7: faults[0].kind: http_status does not apply to stdio" {
		t.Errorf("stdio: %v", err)
	}
	err = ValidateFault(&Fault{Kind: faults.KindStall, Params: &faults.Stall{Stage: "x"}}, "", "")
	if err == nil || err.Error() != `stage: unknown stall stage "x" (want before_headers, after_headers, after_progress, mid_body)` {
		t.Errorf("no prefix: %v", err)
	}
	// Go-built faults without defaults are valid.
	for _, f := range []Fault{
		{Kind: faults.KindCrash},
		{Kind: faults.KindCrash, For: Duration(time.Second), Params: &faults.Crash{Mode: faults.CrashDown}},
		{Kind: faults.KindStall, Params: &faults.Stall{Stage: faults.StageAfterProgress}},
		{Kind: faults.KindFlap, Params: &faults.Flap{On: Duration(time.Second), Off: Duration(time.Second), Fault: &Fault{Kind: faults.KindLatency, Params: &faults.Latency{Delay: Duration(time.Millisecond)}}}},
	} {
		if err := ValidateFault(&f, "f", TransportSSE); err != nil {
			t.Errorf("ValidateFault(%+v): %v", f, err)
		}
	}
	// Negative values that decoding refuses are still caught on Go values.
	p := -0.1
	for _, tc := range []struct {
		f     Fault
		field string
	}{
		{Fault{Kind: faults.KindLatency, Params: &faults.Latency{Delay: -1}}, "delay"},
		{Fault{Kind: faults.KindLatency, Params: &faults.Latency{Delay: 1, Jitter: -1}}, "jitter"},
		{Fault{Kind: faults.KindStall, At: -1}, "at"},
		{Fault{Kind: faults.KindStall, Probability: &p}, "probability"},
		{Fault{Kind: faults.KindFlap, Params: &faults.Flap{On: 1, Off: 1}}, "fault"},
		{Fault{Kind: faults.KindFlap, Params: &faults.Flap{On: 1, Off: 1, Fault: &Fault{Kind: faults.KindFlap}}}, "fault.kind"},
	} {
		err := ValidateFault(&tc.f, "", TransportSSE)
		if !errors.As(err, &se) || se.Field != tc.field {
			t.Errorf("ValidateFault(%+v) = %v, want field %q", tc.f, err, tc.field)
		}
	}
	if err := ValidateFault(nil, "x", ""); err == nil {
		t.Error("nil fault accepted")
	}
}

func TestScriptValidateUsesFaultLines(t *testing.T) {
	t.Parallel()
	s := scMustParse(t, scHead+"  - kind: stall\n  - kind: latency\n    delay: 1s\n", "v.yaml")
	s.Faults[1].Params.(*faults.Latency).Delay = 0
	err := s.Validate()
	var se *ScriptError
	if !errors.As(err, &se) || se.Line != 5 || se.Field != "faults[1].delay" || se.File != "" {
		t.Fatalf("Validate = %v, want line 5 faults[1].delay", err)
	}
	if err := (&Script{}).Validate(); err == nil || err.Error() != "name: required" {
		t.Errorf("empty script: %v", err)
	}
}

func TestScriptCustomTypes(t *testing.T) {
	t.Parallel()
	// Duration
	for in, want := range map[string]time.Duration{`"250ms"`: 250 * time.Millisecond, `0`: 0, `"1m30s"`: 90 * time.Second, `null`: 0} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err != nil || d.D() != want {
			t.Errorf("Duration JSON %s = %v, %v", in, d, err)
		}
		var y struct{ D Duration }
		if err := yaml.Unmarshal([]byte("d: "+in), &y); err != nil || y.D.D() != want {
			t.Errorf("Duration YAML %s = %v, %v", in, y.D, err)
		}
	}
	for _, in := range []string{`"-1s"`, `5`, `"soon"`, `true`, `[1]`} {
		var d Duration
		if err := json.Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("Duration JSON %s accepted", in)
		}
	}
	if b, _ := json.Marshal(Duration(1500 * time.Millisecond)); string(b) != `"1.5s"` {
		t.Errorf("Duration MarshalJSON = %s", b)
	}
	// Size
	for in, want := range map[string]int64{`512`: 512, `"512B"`: 512, `"10KB"`: 10000, `"10KiB"`: 10240, `"1MB"`: 1000000, `"2MiB"`: 2 << 20, `"1 GiB"`: 1 << 30, `"3"`: 3} {
		var s Size
		if err := json.Unmarshal([]byte(in), &s); err != nil || int64(s) != want {
			t.Errorf("Size JSON %s = %d, %v", in, s, err)
		}
		var y struct{ S Size }
		if err := yaml.Unmarshal([]byte("s: "+in), &y); err != nil || int64(y.S) != want {
			t.Errorf("Size YAML %s = %d, %v", in, y.S, err)
		}
	}
	for _, in := range []string{`-1`, `"1.5MB"`, `"2 furlongs"`, `"99999999999GiB"`, `1.5`} {
		var s Size
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("Size JSON %s accepted", in)
		}
	}
	if b, _ := json.Marshal(Size(2048)); string(b) != `2048` {
		t.Errorf("Size MarshalJSON = %s", b)
	}
	// ToolResult
	for _, tc := range []struct {
		r    ToolResult
		json string
		yaml string
	}{
		{ToolResult{Echo: true}, `"echo"`, "echo\n"},
		{ToolResult{Text: "hi"}, `{"text":"hi"}`, "text: hi\n"},
		{ToolResult{JSON: map[string]any{"a": int64(1)}}, `{"json":{"a":1}}`, "json:\n    a: 1\n"},
		{ToolResult{}, `null`, "null\n"},
	} {
		b, err := json.Marshal(tc.r)
		if err != nil || string(b) != tc.json {
			t.Errorf("MarshalJSON(%+v) = %s, %v", tc.r, b, err)
		}
		var back ToolResult
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back, tc.r) {
			t.Errorf("UnmarshalJSON(%s) = %+v, %v", b, back, err)
		}
		y, err := yaml.Marshal(tc.r)
		if err != nil || string(y) != tc.yaml {
			t.Errorf("MarshalYAML(%+v) = %q, %v", tc.r, y, err)
		}
		var yback ToolResult
		if err := yaml.Unmarshal(y, &yback); err != nil || !reflect.DeepEqual(yback, tc.r) {
			t.Errorf("UnmarshalYAML(%q) = %+v, %v", y, yback, err)
		}
	}
	if _, err := json.Marshal(ToolResult{Echo: true, Text: "x"}); err == nil {
		t.Error("MarshalJSON of two results succeeded")
	}
	for _, in := range []string{`"mirror"`, `{"text":"a","json":1}`, `[]`, `{"json":null}`} {
		var r ToolResult
		err := json.Unmarshal([]byte(in), &r)
		var se *ScriptError
		if !errors.As(err, &se) {
			t.Errorf("ToolResult JSON %s: %v", in, err)
		}
	}
}

func TestScriptKnownMethods(t *testing.T) {
	t.Parallel()
	for _, m := range []string{"initialize", "tools/call", "server/discover", "logging/setLevel"} {
		src := scHead + "  - kind: stall\n    match: {method: " + m + "}\n"
		if _, err := ParseScript([]byte(src), "m.yaml"); err != nil {
			t.Errorf("method %s: %v", m, err)
		}
	}
	if len(faults.KnownMethods) != 14 {
		t.Errorf("%d known methods", len(faults.KnownMethods))
	}
}

func TestScriptAliasBomb(t *testing.T) {
	t.Parallel()
	src := `name: x
tools:
  - name: t
    input:
      type: object
      a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]
      b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]
      c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]
      d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]
      e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]
      f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]
      g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]
      h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]
`
	start := time.Now()
	_, err := ParseScript([]byte(src), "bomb.yaml")
	var se *ScriptError
	if !errors.As(err, &se) || !strings.Contains(se.Msg, "document too large") {
		t.Fatalf("got %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v", d)
	}
	// Plain reuse of an anchor is fine.
	s := scMustParse(t, "name: x\nfaults:\n  - &f {kind: stall, match: {tool: a}}\n  - *f\n", "alias.yaml")
	if len(s.Faults) != 2 || s.Faults[1].Match.Tool != "a" || s.Faults[1].Line != 4 {
		t.Errorf("aliased faults: %+v", s.Faults)
	}
}
