package faults

// KindJSONRPCError answers with a JSON-RPC error (code, message).
const KindJSONRPCError Kind = "jsonrpc_error"

// JSONRPCError are the parameters of jsonrpc_error.
type JSONRPCError struct {
	Code    int    `yaml:"code,omitempty" json:"code,omitempty"`
	Message string `yaml:"message,omitempty" json:"message,omitempty"`
}

func init() {
	Register(Spec{Kind: KindJSONRPCError, Order: 50, New: func() Params { return &JSONRPCError{} }})
}

// Validate implements Params.
func (p *JSONRPCError) Validate(c *Check) error {
	if p.Code == 0 {
		return c.Errf("code", "required: a non-zero JSON-RPC error code such as -32603")
	}
	if p.Message == "" {
		return c.Errf("message", "required")
	}
	return nil
}

// HTTP implements Params.
func (p *JSONRPCError) HTTP(x *Exchange) bool {
	x.Respond(x.Msg.ErrorResponse(p.Code, p.Message))
	return false
}

// Stdio implements Params.
func (p *JSONRPCError) Stdio(x *StdioExchange) { x.Write(x.Msg.ErrorResponse(p.Code, p.Message)) }
