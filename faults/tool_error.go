package faults

// KindToolError answers a tools/call with a result with isError: true.
const KindToolError Kind = "tool_error"

// ToolError are the parameters of tool_error.
type ToolError struct {
	Text string `yaml:"text,omitempty" json:"text,omitempty"`
}

func init() {
	Register(Spec{Kind: KindToolError, Order: 60, Methods: []string{"tools/call"}, New: func() Params { return &ToolError{} }})
}

// Validate implements Params.
func (p *ToolError) Validate(c *Check) error {
	if p.Text == "" {
		return c.Errf("text", "required")
	}
	return nil
}

// HTTP implements Params.
func (p *ToolError) HTTP(x *Exchange) bool { x.Respond(x.Msg.ToolErrorResponse(p.Text)); return false }

// Stdio implements Params.
func (p *ToolError) Stdio(x *StdioExchange) { x.Write(x.Msg.ToolErrorResponse(p.Text)) }
