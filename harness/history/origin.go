package history

import (
	"fmt"
	"regexp"

	"github.com/mark3labs/mcp-go/mcp"
)

// Every tool, resource and prompt of a fixture backend carries an origin
// marker naming the backend and its own name, in its description and in
// its _meta. A gateway may rename, prefix or reorder what it exposes; the
// harness finds a backend's tool by its marker, never by guessing the
// gateway's naming scheme. A gateway that drops descriptions and _meta is
// judged by the target's tool name pattern instead.

// OriginMetaKey is the _meta key of the origin marker ("backend/name").
const OriginMetaKey = "vmcp-chaos/origin"

// OriginMarker is the marker text put in a description: it names the
// backend and the item's own (unexposed) name.
func OriginMarker(backend, name string) string {
	return fmt.Sprintf("[vmcp-chaos-origin:%s/%s]", backend, name)
}

var originRE = regexp.MustCompile(`\[vmcp-chaos-origin:([^/\]\s]+)/([^\]\s]+)\]`)

// ParseOrigin finds the origin marker in meta (OriginMetaKey) or, failing
// that, in description. ok is false when neither carries one.
func ParseOrigin(description string, meta map[string]any) (backend, name string, ok bool) {
	if s, isStr := meta[OriginMetaKey].(string); isStr {
		if m := regexp.MustCompile(`^([^/\s]+)/(\S+)$`).FindStringSubmatch(s); m != nil {
			return m[1], m[2], true
		}
	}
	if m := originRE.FindStringSubmatch(description); m != nil {
		return m[1], m[2], true
	}
	return "", "", false
}

// MetaFields is the fields of an MCP _meta (nil for none), as ParseOrigin
// reads them.
func MetaFields(m *mcp.Meta) map[string]any {
	if m == nil {
		return nil
	}
	return m.AdditionalFields
}
