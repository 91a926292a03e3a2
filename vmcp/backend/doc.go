// Package backend is the gateway's connection to one backend MCP server:
// dialing (with the legacy-then-negotiated fallback), the streamable HTTP,
// legacy HTTP+SSE and stdio transports, the validators that check every
// backend message before mcp-go sees it (JSON bodies, SSE events, stdio
// lines), and the classification of every failure into an *Error of one
// ErrorKind that names the backend.
//
// The API is small:
//
//	d := backend.NewDialer(life, cfg, http.DefaultTransport, logger, clientInfo)
//	c, err := d.Dial(ctx, cfg.Backends[0], true)   // *Conn, *Error
//	err = c.Invoke(ctx, "tools/list", timeout, func(ctx context.Context) error {
//		_, err := c.Client().ListTools(ctx, mcp.ListToolsRequest{})
//		return err
//	})
//	<-c.Close()
//
// Callers bound whole operations with ErrCallTimeout (context
// cancel cause), WithOpenDeadline, and end them with ErrSessionClosing;
// WaitError classifies a wait that such a context ended.
package backend
