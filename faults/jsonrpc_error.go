package faults

// KindJSONRPCError answers with a JSON-RPC error (code, message).
const KindJSONRPCError Kind = "jsonrpc_error"

func init() {
	Register(Spec{
		Kind:   KindJSONRPCError,
		Order:  50,
		Params: []string{"code", "message"},
		Validate: func(f *Fault, c *Check) error {
			if f.Code == 0 {
				return c.Errf("code", "required: a non-zero JSON-RPC error code such as -32603")
			}
			if f.Message == "" {
				return c.Errf("message", "required")
			}
			return nil
		},
		HTTP:  func(x *Exchange, f *Fault) bool { x.Respond(x.Msg.ErrorResponse(f.Code, f.Message)); return false },
		Stdio: func(x *StdioExchange, f *Fault) { x.Write(x.Msg.ErrorResponse(f.Code, f.Message)) },
	})
}
