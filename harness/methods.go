package harness

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
func (m Methods) Validate() error {
	for i, f := range m {
		if !slices.Contains(MethodFamilies, f) {
			return fmt.Errorf("methods[%d]: unknown method family %q (want %s)", i, f, strings.Join(MethodFamilies, ", "))
		}
		if slices.Index(m, f) != i {
			return fmt.Errorf("methods[%d]: %q listed twice", i, f)
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
