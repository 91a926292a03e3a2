package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// suggestedPath is where --suggest writes the corrected profile of file:
// "gw.yaml" → "gw.suggested.yaml".
func suggestedPath(file string) string {
	if base, ok := strings.CutSuffix(file, ".yaml"); ok {
		return base + ".suggested.yaml"
	}
	if base, ok := strings.CutSuffix(file, ".yml"); ok {
		return base + ".suggested.yml"
	}
	return file + ".suggested.yaml"
}

// suggestProfile rewrites the profile data (its comments and other fields
// kept) with the field each fact implies: set, or removed where the fact
// implies the default (methods, backendTransports: all). A declared
// reinit-on-404 is kept (no check here can confirm it). Each field set
// gets a comment with what was measured.
func suggestProfile(data []byte, lines []harness.FactLine, declared targets.Capabilities) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("the profile is not a YAML mapping")
	}
	m := doc.Content[0]
	for _, l := range lines {
		if l.Key == "" {
			continue
		}
		value := l.Value
		if l.Key == "capabilities" && declared.Has(targets.CapReinitOn404) {
			value = strings.TrimSuffix(value, "]")
			if value != "[" {
				value += ", "
			}
			value += string(targets.CapReinitOn404) + "]"
		}
		i := keyIndex(m, l.Key)
		if value == "" {
			if i >= 0 {
				m.Content = append(m.Content[:i], m.Content[i+2:]...)
			}
			continue
		}
		var v yaml.Node
		if err := yaml.Unmarshal([]byte(value), &v); err != nil || len(v.Content) != 1 {
			return nil, fmt.Errorf("%s: %q is not a YAML value: %v", l.Key, value, err)
		}
		val := v.Content[0]
		val.Style = yaml.FlowStyle
		if val.Kind == yaml.ScalarNode && l.Key == "toolNames" {
			val.Style = yaml.DoubleQuotedStyle
		}
		comment := "measured by chaos profile check --suggest: " + strings.Join(strings.Fields(l.Seen), " ")
		if i >= 0 {
			m.Content[i].HeadComment = "# " + comment
			m.Content[i+1] = val
			continue
		}
		m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: l.Key, HeadComment: "# " + comment}, val)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	return buf.Bytes(), enc.Close()
}

// keyIndex is the index of key's key node in mapping m, or -1.
func keyIndex(m *yaml.Node, key string) int {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return i
		}
	}
	return -1
}

// writeSuggested writes the suggested profile beside file and checks
// that it loads.
func writeSuggested(file string, lines []harness.FactLine, declared targets.Capabilities) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", err
	}
	out, err := suggestProfile(data, lines, declared)
	if err != nil {
		return "", fmt.Errorf("suggest a profile from %s: %w", file, err)
	}
	path := suggestedPath(file)
	if err := os.WriteFile(path, out, 0o644); err != nil {
		return "", err
	}
	if _, err := targets.LoadProfile(path); err != nil {
		return path, fmt.Errorf("the suggested profile does not load: %w", err)
	}
	return path, nil
}
