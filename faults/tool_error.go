package faults

// KindToolError answers a tools/call with a result with isError: true.
const KindToolError Kind = "tool_error"

func init() {
	Register(Spec{
		Kind:    KindToolError,
		Order:   60,
		Params:  []string{"text"},
		Methods: []string{"tools/call"},
		Validate: func(f *Fault, c *Check) error {
			if f.Text == "" {
				return c.Errf("text", "required")
			}
			return nil
		},
		HTTP:  func(x *Exchange, f *Fault) bool { x.Respond(x.Msg.ToolErrorResponse(f.Text)); return false },
		Stdio: func(x *StdioExchange, f *Fault) { x.Write(x.Msg.ToolErrorResponse(f.Text)) },
	})
}
