package vmcp

// SetModernHop turns the pass-through hop for stateless requests on or
// off (on by default): off, they take mcp-go's path, for comparison.
func SetModernHop(g *Gateway, on bool) { g.noModernHop.Store(!on) }
