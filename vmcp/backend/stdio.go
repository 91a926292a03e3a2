package backend

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"

	"github.com/mark3labs/mcp-go/client/transport"

	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
)

// stdioTransport is mcp-go's stdio transport over a process the gateway
// starts itself, so that the process's stdout passes through a
// lineValidator before mcp-go reads it (mcp-go's own stdio transport skips
// lines it cannot parse or match, and reads lines of any size). The process
// lives as long as its connection (exec.CommandContext on the connection's
// lifetime: conn.close kills it when it does not exit within the close
// timeout of its stdin closing).
type stdioTransport struct {
	*transport.Stdio
	c      *Conn
	stdout *os.File // the read end of the process's stdout
	exited chan struct{}
}

// newStdioTransport starts backend b's command for connection c.
func (d *Dialer) newStdioTransport(b config.Backend, c *Conn) (*stdioTransport, error) {
	cmd := exec.CommandContext(c.life, b.Command[0], b.Command[1:]...)
	cmd.Env = stdioEnv(b.Env, os.LookupEnv) // never the gateway's whole environment
	cmd.Stderr = &stderrLog{logger: d.logger, backend: b.Name}
	// A grandchild holding stderr open must not keep Wait (and close) busy.
	cmd.WaitDelay = d.cfg.Timeouts.Close
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	// An *os.File as stdout: the process writes straight into the pipe, and
	// Wait does not close the read end under a reader still draining it.
	pr, pw, err := os.Pipe()
	if err != nil {
		stdin.Close()
		return nil, err
	}
	cmd.Stdout = pw
	if err := cmd.Start(); err != nil {
		pr.Close()
		pw.Close()
		stdin.Close()
		return nil, fmt.Errorf("start %s: %w", b.Command[0], err)
	}
	pw.Close()
	t := &stdioTransport{c: c, stdout: pr, exited: make(chan struct{})}
	go func() {
		defer close(t.exited)
		_ = cmd.Wait()
	}()
	v := &lineValidator{src: bufio.NewReaderSize(pr, 64<<10), maxBytes: d.cfg.Limits.MaxResponseBytes, hooks: c}
	t.Stdio = transport.NewIO(v, stdin, nil)
	transport.WithCommandLogger(d.logger)(t.Stdio)
	return t, nil
}

// SendRequest registers the request's id as awaiting a response (so the
// validator can tell a wrong id from a right one), and, if the request
// ends without one (timeout, cancel), as abandoned: its late answer is
// dropped. It never returns (nil, nil) (see answered).
func (t *stdioTransport) SendRequest(ctx context.Context, req transport.JSONRPCRequest) (*transport.JSONRPCResponse, error) {
	raw, _ := json.Marshal(req.ID)
	id := idKey(raw)
	if id != "" {
		traceFrom(ctx).setRequest(id)
		t.c.expect(id)
	}
	resp, err := t.Stdio.SendRequest(ctx, req)
	resp, err = answered(req.Method, resp, err)
	if err != nil && id != "" {
		t.c.forget(id)
	}
	return resp, err
}

// Close closes the process's stdin and waits for it to exit (the
// connection kills it after the close timeout).
func (t *stdioTransport) Close() error {
	err := t.Stdio.Close()
	<-t.exited
	t.stdout.Close()
	return err
}

// lineValidator sits between a stdio backend's stdout and mcp-go. It reads
// line by line, bounded by maxBytes, and passes on only lines it has
// validated: malformed JSON, a response whose id answers no request, or an
// oversized line fails the connection (an invalid response naming the
// backend for every call in flight). A late answer to a request the gateway
// gave up on is dropped; empty lines are skipped.
type lineValidator struct {
	src      *bufio.Reader
	maxBytes int64
	hooks    streamHooks
	validated
}

func (v *lineValidator) Read(p []byte) (int, error) { return v.read(p, v.step) }

func (v *lineValidator) step() error {
	line, err := readLine(v.src, 0, v.maxBytes)
	var inv *invalidResponseError
	switch {
	case errors.As(err, &inv):
		return v.reject(err)
	case err != nil:
		// A last line without its newline is never dispatched by mcp-go:
		// the stream ends there.
		return err
	}
	data := bytes.TrimSpace(line)
	if len(data) == 0 {
		return nil
	}
	late, err := arrivedOn(v.hooks, data)
	if err != nil {
		return v.reject(err)
	}
	if late {
		return nil
	}
	v.out.Write(data)
	v.out.WriteByte('\n')
	return nil
}

func (v *lineValidator) reject(err error) error {
	v.hooks.fail(err)
	return err
}

// stderrLog logs a stdio backend's stderr, line by line, at debug level.
type stderrLog struct {
	logger  *slog.Logger
	backend string
	partial []byte
}

func (l *stderrLog) Write(p []byte) (int, error) {
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		l.logger.Debug("backend stderr", "backend", l.backend, "line", strings.TrimRight(string(l.partial[:i]), "\r"))
		l.partial = l.partial[i+1:]
	}
	if len(l.partial) > 4096 {
		l.logger.Debug("backend stderr", "backend", l.backend, "line", string(l.partial))
		l.partial = nil
	}
	return len(p), nil
}
