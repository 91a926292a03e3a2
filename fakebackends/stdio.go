package fakebackends

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
)

// ErrCrashed is returned by ServeStdio when a crash fault ended the backend.
var ErrCrashed = errors.New("fake backend crashed (crash fault)")

// maxStdioLine bounds one JSON-RPC line read from stdin.
const maxStdioLine = 16 << 20

// WithOnReady is called once the backend serves, with its control API URL.
// ServeStdio uses it to report where the control API is, since stdout
// carries the protocol.
func WithOnReady(fn func(adminURL string)) Option { return func(o *options) { o.onReady = fn } }

// ServeStdio serves the script over stdio: JSON-RPC lines from in, answers
// to out. Faults act per line: crash ends the backend (or the process, with
// exit: true and WithExit), stall holds the request until the fault that
// holds it is replaced or cleared, latency delays it, jsonrpc_error,
// tool_error and malformed answer in its place. The control API runs on the
// script's admin address. ServeStdio returns nil when in ends or ctx is
// cancelled, ErrCrashed after a crash.
func ServeStdio(ctx context.Context, script *Script, in io.Reader, out io.Writer, opts ...Option) error {
	c, err := newCore(script, true, opts)
	if err != nil {
		return err
	}
	s := c.script
	sb := &stdioBackend{core: c, out: &lockedWriter{w: out}, done: make(chan struct{})}
	sb.engine.Set(s.Faults...)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var adminInflight sync.WaitGroup
	adminURL, admin, err := sb.serveAdmin(ctx, &adminInflight, adminOps{
		expire: func() int { return 0 },
		info:   func() map[string]any { return map[string]any{"name": s.Name, "transport": TransportStdio} },
	})
	if err != nil {
		return err
	}
	defer func() {
		_ = admin.Close()
		adminInflight.Wait()
	}()

	mcpSrv := newMCPServer(&s, sb.done)
	pr, pw := io.Pipe()
	listenErr := make(chan error, 1)
	go func() {
		listenErr <- server.NewStdioServer(mcpSrv).Listen(ctx, pr, sb.out)
	}()
	if sb.opts.onReady != nil {
		sb.opts.onReady(adminURL)
	}

	lines := make(chan []byte)
	readErr := make(chan error, 1)
	go func() { // owned: ends when in ends (the caller closes it) or ctx ends
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 64<<10), maxStdioLine+2) // the longest line and its CR LF
		tooLong := fmt.Errorf("stdin line longer than %d bytes", maxStdioLine)
		for sc.Scan() {
			if len(sc.Bytes()) > maxStdioLine {
				readErr <- tooLong
				return
			}
			if len(sc.Bytes()) == 0 {
				continue
			}
			select {
			case lines <- bytes.Clone(sc.Bytes()):
			case <-ctx.Done():
				return
			}
		}
		err := sc.Err()
		if errors.Is(err, bufio.ErrTooLong) {
			err = tooLong
		}
		readErr <- cmp.Or(err, io.EOF)
	}()

	var result error
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err := <-readErr:
			if !errors.Is(err, io.EOF) {
				result = err
			}
			break loop
		case line := <-lines:
			if crashed := sb.handle(ctx, line, pw); crashed {
				result = ErrCrashed
				break loop
			}
		}
	}
	close(sb.done)
	sb.leased.lease.Stop()
	_ = pw.Close()
	cancel()
	sb.pending.Wait()
	select {
	case <-listenErr:
	case <-time.After(5 * time.Second):
	}
	return result
}

// stdioBackend is the state of one ServeStdio call.
type stdioBackend struct {
	*core
	out     *lockedWriter
	done    chan struct{}
	pending sync.WaitGroup // delayed and stalled lines
}

// handle applies the faults to one line and forwards it to the MCP server
// when it should be served. It reports whether the backend crashed.
func (sb *stdioBackend) handle(ctx context.Context, line []byte, pw *io.PipeWriter) bool {
	start := time.Now()
	msg := faults.ParseMessage(line)
	rec := RequestRecord{Time: start, Method: msg.Method, Tool: msg.Name, ID: string(msg.ID), Marker: msg.Marker, Cancels: string(msg.Cancels), Protocol: "legacy"}
	d := sb.engine.Decide(msg.Method, msg.Name)
	rec.Fault = d.Label
	pending := sb.log.Begin(rec)
	forward := func() { _, _ = pw.Write(append(line, '\n')) }
	logDone := func() {
		rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		sb.log.End(pending, rec)
	}
	f := d.Fault
	if (f == nil || f.Kind == faults.KindSessionExpire) && d.Delay <= 0 {
		forward()
		logDone()
		return false
	}
	x := &faults.StdioExchange{Msg: msg, Forward: forward, Write: sb.out.writeLine, Released: d.Released, Done: ctx.Done(),
		Crash: func(exit bool, code int) {
			if exit {
				sb.opts.exit(code)
			}
		}}
	if f != nil && f.Kind == faults.KindCrash {
		logDone()
		faults.ApplyStdio(x, f)
		return true
	}
	sb.pending.Go(func() { // ends with ctx, which ServeStdio cancels as it ends (after sb.done)
		defer logDone()
		if sleepCtx(ctx, sb.done, d.Delay) != nil {
			return
		}
		if f == nil {
			forward()
			return
		}
		faults.ApplyStdio(x, f)
	})
	return false
}

// lockedWriter serializes whole writes to one writer.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// Write implements io.Writer.
func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) writeLine(p []byte) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, _ = l.w.Write(append(append([]byte(nil), p...), '\n'))
}
