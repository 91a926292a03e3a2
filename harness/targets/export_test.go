package targets

// This file gives the package's external tests (package targets_test) what
// only they use.

import "github.com/vmcp-chaos/vmcp-chaos/vmcp"

// VMCP returns the *vmcp.Gateway behind a Reference target's gateway.
func VMCP(g Gateway) (*vmcp.Gateway, bool) {
	rg, ok := g.(*referenceGateway)
	if !ok {
		return nil, false
	}
	return rg.g, true
}

// WaitTools is waitTools.
var WaitTools = waitTools
