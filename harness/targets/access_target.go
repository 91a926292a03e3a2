package targets

import "github.com/vmcp-chaos/vmcp-chaos/vmcp"

// ExecGateway is what an Exec target's gateways offer beyond Gateway.
type ExecGateway interface {
	Gateway
	// PID is the gateway process id.
	PID() int
	// Output is the tail of the gateway's stdout and stderr.
	Output() string
	// ConfigPath is the rendered configuration file.
	ConfigPath() string
}

// VMCP returns the *vmcp.Gateway behind a Reference target's gateway.
func VMCP(g Gateway) (*vmcp.Gateway, bool) {
	rg, ok := g.(*referenceGateway)
	if !ok {
		return nil, false
	}
	return rg.g, true
}

var _ ExecGateway = (*execGateway)(nil)
