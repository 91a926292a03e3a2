package kit

import (
	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"maps"
	"strings"
)

// The fixture backends: Alpha is the healthy bystander, Beta the backend
// faults go into, Gamma a third where a scenario needs one.
const (
	Alpha = "alpha"
	Beta  = "beta"
	Gamma = "gamma"
)

// Script is a fixture backend named name: tools echo (echoes its
// arguments) and slow (answers "done"), a resource Readme(name) and a
// prompt greet. Each carries the origin marker (history.OriginMarker) in
// its description and _meta, by which Names finds it in any gateway's
// lists.
func Script(name string, transport fakebackends.Transport) *fakebackends.Script {
	return &fakebackends.Script{
		Name: name, Transport: transport, Protocol: fakebackends.ProtocolAuto,
		Tools: []fakebackends.ToolSpec{
			{Name: "echo", Description: "Echo the arguments of " + name + " " + history.OriginMarker(name, "echo"), Meta: origin(name, "echo"),
				Input: map[string]any{"type": "object", "properties": map[string]any{"msg": map[string]any{"type": "string"}}}},
			{Name: "slow", Description: "A slow tool of " + name + " " + history.OriginMarker(name, "slow"), Meta: origin(name, "slow"),
				Result: fakebackends.ToolResult{Text: "done"}},
		},
		Resources: []fakebackends.ResourceSpec{{URI: Readme(name), Name: "readme", Text: "hello from " + name,
			Description: "The readme of " + name + " " + history.OriginMarker(name, Readme(name)), Meta: origin(name, Readme(name))}},
		Prompts: []fakebackends.PromptSpec{{Name: "greet", Text: "Hello from " + name,
			Description: "A greeting from " + name + " " + history.OriginMarker(name, "greet"), Meta: origin(name, "greet")}},
	}
}

func origin(backend, name string) map[string]any {
	return map[string]any{history.OriginMetaKey: backend + "/" + name}
}

// Readme is the URI of a fixture backend's resource.
func Readme(backend string) string { return "mem://" + backend + "/readme" }

// TwoBackends is Alpha (streamable HTTP) and Beta on transport, both
// in-process.
func TwoBackends(transport fakebackends.Transport) []harness.BackendSpec {
	return []harness.BackendSpec{
		{Script: Script(Alpha, fakebackends.TransportStreamableHTTP)},
		{Script: Script(Beta, transport)},
	}
}

// EchoArgs are the arguments of an echo call.
func EchoArgs(msg string) map[string]any { return map[string]any{"msg": msg} }

// FixtureName is the name a fixture backend gives its tool or prompt
// name: name itself, or, when the target needs backend-distinct bare
// names (distinct: targets.DistinctToolNamesOf, a gateway that does not
// prefix or that drops colliding names), name + "_" + backend, so the
// backends' tools stay distinct.
func FixtureName(distinct bool, backend, name string) string {
	if !distinct {
		return name
	}
	return name + "_" + backend
}

// AdaptTopology renames the fixture tools and prompts (those carrying an
// origin marker) of topo's backends to FixtureName for target (its tool
// name pattern and distinctToolNames), with their markers (so readiness, profile check and the
// scenarios look for the same names), and the tool matches of their
// scripted faults with them. Kit.Tool(Beta, "echo") still finds beta's
// echo (Names looks the renamed marker up). runner.Run calls it before
// starting a topology.
func AdaptTopology(topo *harness.Topology, target targets.Target) {
	if !targets.DistinctToolNamesOf(target) {
		return
	}
	for _, b := range topo.Backends {
		s := b.Script
		if s == nil {
			continue
		}
		renamed := map[string]string{}
		for i, t := range s.Tools {
			if _, name, ok := history.ParseOrigin(t.Description, t.Meta); ok {
				to := FixtureName(true, s.Name, name)
				s.Tools[i].Name = to
				s.Tools[i].Description, s.Tools[i].Meta = remark(t.Description, t.Meta, s.Name, name, to)
				renamed[t.Name] = to
			}
		}
		for i, p := range s.Prompts {
			if _, name, ok := history.ParseOrigin(p.Description, p.Meta); ok {
				to := FixtureName(true, s.Name, name)
				s.Prompts[i].Name = to
				s.Prompts[i].Description, s.Prompts[i].Meta = remark(p.Description, p.Meta, s.Name, name, to)
			}
		}
		for i, f := range s.Faults {
			if to, ok := renamed[f.Match.Tool]; ok {
				s.Faults[i].Match.Tool = to
			}
		}
	}
}

// remark moves an origin marker from backend's name to its new name, in
// the description and in a copy of the _meta.
func remark(description string, meta map[string]any, backend, name, to string) (string, map[string]any) {
	description = strings.ReplaceAll(description, history.OriginMarker(backend, name), history.OriginMarker(backend, to))
	m := maps.Clone(meta)
	if _, ok := m[history.OriginMetaKey]; ok {
		m[history.OriginMetaKey] = backend + "/" + to
	}
	return description, m
}
