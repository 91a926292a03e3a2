package containers

import (
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Backend MCP authentication.
//
// A backend container's MCP listener serves 0.0.0.0 inside the container:
// the gateway container reaches it by alias on the run's network. When the
// gateway is `chaos vmcp` in the run's image, this package writes its
// config, so the listener requires the run's MCP token (VMCP_CHAOS_TOKEN)
// and withBackendToken gives the gateway that token as each container
// backend's `headers: {Authorization: Bearer …}` (vmcp/config's backend
// headers). Any other gateway (an image of its own, or a gateway on the
// host reaching the published 127.0.0.1 port) renders its config from
// runtimes.BackendInfo, which carries no headers: its backends keep
// `--allow-network` (reachable from the run's private network and, through
// the port published on 127.0.0.1, from this host only).

// withBackendToken adds the Authorization header carrying token to every
// backend of the chaos vmcp config text whose url is one of the
// topology's backend containers (by alias). Text is returned unchanged
// when the topology's backends take no token.
func (t *Topology) withBackendToken(text, token string) (string, error) {
	if !t.requiresBackendToken() {
		return text, nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	if len(doc.Content) == 0 {
		return text, nil
	}
	backends := mapValue(doc.Content[0], "backends")
	if backends == nil || backends.Kind != yaml.SequenceNode {
		return text, nil
	}
	for _, b := range backends.Content {
		url := mapValue(b, "url")
		if url == nil || !t.isBackendURL(url.Value) {
			continue
		}
		headers := mapValue(b, "headers")
		if headers == nil {
			headers = &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
			b.Content = append(b.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "headers"}, headers)
		}
		value := &yaml.Node{Kind: yaml.ScalarNode, Value: "Bearer " + token, Style: yaml.DoubleQuotedStyle}
		if old := mapValue(headers, "Authorization"); old != nil {
			*old = *value
		} else {
			headers.Content = append(headers.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: "Authorization"}, value)
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return "", fmt.Errorf("config: %w", err)
	}
	return string(out), nil
}

// isBackendURL reports whether url is the MCP endpoint of one of the
// topology's containers, by alias on its network.
func (t *Topology) isBackendURL(url string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.ctrs {
		if strings.HasPrefix(url, fmt.Sprintf("http://%s:%d/", c.alias, BackendMCPPort)) {
			return true
		}
	}
	return false
}

// mapValue is the value of key in the mapping node m, or nil.
func mapValue(m *yaml.Node, key string) *yaml.Node {
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}
