package targets

import (
	"fmt"
	"slices"
	"strings"
)

// Methods are the MCP method families a gateway offers its clients:
// "tools", "resources", "prompts". Empty: every family (what the gateway
// advertises at initialize then decides).
type Methods []string

// MethodFamilies are the families a profile's methods may list.
var MethodFamilies = []string{"tools", "resources", "prompts"}

// Validate checks that every entry is a known family, listed once.
func (m Methods) Validate() error { return checkList("methods", "method family", m, MethodFamilies) }

// checkList checks that each of list (the profile's field) is one of
// known and listed once.
func checkList(field, what string, list, known []string) error {
	for i, v := range list {
		if !slices.Contains(known, v) {
			return fmt.Errorf("%s[%d]: unknown %s %q (want %s)", field, i, what, v, strings.Join(known, ", "))
		}
		if slices.Index(list, v) != i {
			return fmt.Errorf("%s[%d]: %q listed twice", field, i, v)
		}
	}
	return nil
}

// Lacks returns why method (e.g. "resources/read") is not offered, or ""
// when it is (or no methods are declared).
func (m Methods) Lacks(method string) string {
	family, _, _ := strings.Cut(method, "/")
	if len(m) == 0 || !slices.Contains(MethodFamilies, family) || slices.Contains(m, family) {
		return ""
	}
	return fmt.Sprintf("the target's profile offers %s only, not %s", strings.Join(m, ", "), family)
}

// MethodLister is a Target that says which method families its gateway
// offers (a profile's methods).
type MethodLister interface {
	OfferedMethods() Methods
}

// MethodsOf returns t's declared methods (nil: not declared).
func MethodsOf(t Target) Methods {
	if l, ok := t.(MethodLister); ok {
		return l.OfferedMethods()
	}
	return nil
}

// OfferedMethods implements MethodLister (Exec.Methods).
func (e Exec) OfferedMethods() Methods { return e.Methods }

// Transports are the backend transports a gateway takes
// ("streamable-http", "sse", "stdio"). Empty: every one.
type Transports []string

// TransportNames are the transports a profile's backendTransports may list.
var TransportNames = []string{"streamable-http", "sse", "stdio"}

// Validate checks that every entry is a known transport, listed once.
func (t Transports) Validate() error {
	return checkList("backendTransports", "transport", t, TransportNames)
}

// Lacks returns why a backend on transport cannot be put behind the
// gateway, or "" when it can (or no transports are declared).
func (t Transports) Lacks(transport string) string {
	if len(t) == 0 || slices.Contains(t, transport) {
		return ""
	}
	return fmt.Sprintf("the target's profile takes %s backends only, not %s", strings.Join(t, ", "), transport)
}

// TransportsOf returns t's declared backend transports (nil: any).
func TransportsOf(t Target) Transports {
	if e, ok := t.(Exec); ok {
		return e.Transports
	}
	return nil
}
