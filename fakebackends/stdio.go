package fakebackends

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/faults/control"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/server"
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
	if script == nil {
		return errors.New("fakebackends: nil script")
	}
	s := *script
	s.Transport = TransportStdio
	s.ApplyDefaults()
	if err := s.Validate(); err != nil {
		return err
	}
	sb := &stdioBackend{script: s, engine: newEngine(s.Seed), out: &lockedWriter{w: out}, done: make(chan struct{})}
	for _, o := range opts {
		o(&sb.opts)
	}
	if sb.opts.logger == nil {
		sb.opts.logger = slog.New(slog.DiscardHandler)
	}
	if err := sb.checkFaults(s.Faults); err != nil {
		return err
	}
	sb.engine.set(s.Faults)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	adminURL, stopAdmin, err := sb.startAdmin(ctx)
	if err != nil {
		return err
	}
	defer stopAdmin()

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
		r := bufio.NewReaderSize(in, 64<<10)
		for {
			line, err := readLine(r)
			if len(line) > 0 {
				select {
				case lines <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				readErr <- err
				return
			}
		}
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
	_ = pw.Close()
	cancel()
	sb.pending.Wait()
	select {
	case <-listenErr:
	case <-time.After(5 * time.Second):
	}
	return result
}

// readLine reads one line, refusing lines over maxStdioLine.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, isPrefix, err := r.ReadLine()
		line = append(line, part...)
		if len(line) > maxStdioLine {
			return nil, fmt.Errorf("stdin line longer than %d bytes", maxStdioLine)
		}
		if err != nil || !isPrefix {
			return line, err
		}
	}
}

// stdioBackend is the state of one ServeStdio call.
type stdioBackend struct {
	script  Script
	opts    options
	engine  *engine
	log     RequestLog
	out     *lockedWriter
	done    chan struct{}
	pending sync.WaitGroup // delayed and stalled lines
}

func (sb *stdioBackend) checkFaults(faults []Fault) error {
	for i := range faults {
		f := &faults[i]
		if err := ValidateFault(f, fmt.Sprintf("faults[%d]", i), TransportStdio); err != nil {
			return err
		}
		eff := f
		if f.Kind == KindFlap && f.Fault != nil {
			eff = f.Fault
		}
		if eff.Kind == KindCrash && eff.Exit && sb.opts.exit == nil {
			return fmt.Errorf("faults[%d]: crash with exit: true needs process mode (chaos backend)", i)
		}
	}
	return nil
}

// handle applies the faults to one line and forwards it to the MCP server
// when it should be served. It reports whether the backend crashed.
func (sb *stdioBackend) handle(ctx context.Context, line []byte, pw *io.PipeWriter) bool {
	start := time.Now()
	msg := parseRPC(line)
	rec := RequestRecord{Time: start, Method: msg.Method, Tool: msg.Name, Protocol: "legacy"}
	if len(msg.ID) > 0 {
		rec.ID = string(msg.ID)
	}
	d := sb.engine.decide(msg.Method, msg.Name)
	rec.Fault = d.label
	forward := func() { _, _ = pw.Write(append(line, '\n')) }
	logDone := func() {
		rec.DurationMS = float64(time.Since(start).Microseconds()) / 1000
		sb.log.Add(rec)
	}
	f := d.fault
	if (f == nil || f.Kind == KindSessionExpire) && d.delay <= 0 {
		forward()
		logDone()
		return false
	}
	x := &faults.StdioExchange{Msg: msg, Forward: forward, Write: sb.out.writeLine, Released: d.released, Done: ctx.Done(),
		Crash: func(exit bool, code int) {
			if exit {
				sb.opts.exit(code)
			}
		}}
	if f != nil && f.Kind == KindCrash {
		logDone()
		faults.ApplyStdio(x, f)
		return true
	}
	sb.pending.Add(1)
	go func() { // owned by sb.pending; ends with ctx or sb.done
		defer sb.pending.Done()
		defer logDone()
		if sleepCtx(ctx, sb.done, d.delay) != nil {
			return
		}
		if f == nil {
			forward()
			return
		}
		lctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() { // ends with this line (cancel) or the backend
			select {
			case <-sb.done:
				cancel()
			case <-lctx.Done():
			}
		}()
		x.Done = lctx.Done()
		faults.ApplyStdio(x, f)
	}()
	return false
}

// startAdmin serves the control API on the script's admin address (after
// ApplyDefaults never empty: the default is 127.0.0.1:0).
func (sb *stdioBackend) startAdmin(ctx context.Context) (string, func(), error) {
	host := sb.script.Admin
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	if !control.IsLoopback(host) && sb.opts.adminToken == "" {
		return "", nil, fmt.Errorf("fakebackends: %s: control API on non-loopback address %q needs an admin token (--admin-token)", sb.script.Name, sb.script.Admin)
	}
	ln, err := listen(ctx, sb.script.Admin)
	if err != nil {
		return "", nil, fmt.Errorf("fakebackends: %s: admin listen %s: %w", sb.script.Name, sb.script.Admin, err)
	}
	var inflight sync.WaitGroup
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: newAdminMux(sb.opts.adminToken, &inflight, adminOps{
		faults: sb.engine.list,
		set: func(f ...Fault) error {
			if err := sb.checkFaults(f); err != nil {
				return err
			}
			sb.engine.set(f)
			return nil
		},
		add: func(f ...Fault) error {
			if err := sb.checkFaults(f); err != nil {
				return err
			}
			sb.engine.add(f)
			return nil
		},
		clear:    func() { sb.engine.set(nil) },
		expire:   func() int { return 0 },
		requests: sb.log.Snapshot,
		info: func() map[string]any {
			return map[string]any{"name": sb.script.Name, "transport": TransportStdio}
		},
	})}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = srv.Serve(ln)
	}()
	return "http://" + ln.Addr().String(), func() {
		_ = srv.Close()
		<-served
		inflight.Wait()
	}, nil
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
