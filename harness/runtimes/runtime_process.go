package runtimes

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/internal/stableport"
)

// Process runs each fake backend as a `chaos backend` process, so SIGKILL
// is a real crash and SIGSTOP a real stall. Faults go through the backend's
// control API. Stdio scripts are not spawned: their RunningBackend carries
// the Command a gateway runs, and its control methods return
// ErrNotSupported.
type Process struct {
	// Binary is the chaos binary; "" means BuildChaos.
	Binary string
	// Args are extra arguments after `backend --script FILE`.
	Args []string
	// Env is extra environment (KEY=value) for the process.
	Env []string
	// Stderr, when set, receives a copy of each backend's stderr.
	Stderr io.Writer
}

// Name returns "process".
func (Process) Name() string { return "process" }

// Start writes the script to a temporary file, spawns `chaos backend` and
// waits (bounded by ctx, default 30 s) for its ready line.
func (rt Process) Start(ctx context.Context, script *fakebackends.Script) (RunningBackend, error) {
	if script == nil {
		return nil, fmt.Errorf("harness: process runtime: nil script")
	}
	bin := rt.Binary
	if bin == "" {
		var err error
		if bin, err = BuildChaos(ctx); err != nil {
			return nil, err
		}
	}
	s := *script
	s.ApplyDefaults()
	dir, err := OwnedTempDir("harness-backend-")
	if err != nil {
		return nil, fmt.Errorf("harness: backend %q: %w", s.Name, err)
	}
	pb := &processBackend{rt: rt, bin: bin, dir: dir, script: s}
	if err := pb.writeScript(); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	if s.Transport == fakebackends.TransportStdio {
		return &stdioBackend{pb: pb}, nil
	}
	if err := pb.firstSpawn(ctx); err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	return pb, nil
}

// firstSpawn starts the process on stable ports (stableport) where the
// script leaves the choice to the kernel (127.0.0.1:0): a respawn binds
// the same addresses again, and a port from the ephemeral range can be
// taken by anyone's outgoing connection while the process is down (seen
// under load: the crash-looping backend's restart exited 2, "address
// already in use"). A pick taken before the start is picked again.
func (pb *processBackend) firstSpawn(ctx context.Context) error {
	for try := 1; ; try++ {
		if err := pb.pinStable(); err != nil {
			return err
		}
		err := pb.spawn(ctx)
		if err == nil || try == respawnTries || ctx.Err() != nil || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
	}
}

// pinStable pins each kernel-chosen loopback address of the script to a
// stable port.
func (pb *processBackend) pinStable() error {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	for _, a := range []struct {
		script string
		pin    *string
	}{{pb.script.Listen, &pb.listen}, {pb.script.Admin, &pb.adminAddr}} {
		host, port, err := net.SplitHostPort(a.script)
		if err != nil || port != "0" || host != "127.0.0.1" {
			continue
		}
		p, err := stableport.Pick()
		if err != nil {
			return fmt.Errorf("harness: backend %q: %w", pb.script.Name, err)
		}
		*a.pin = net.JoinHostPort(host, strconv.Itoa(p))
	}
	return nil
}

// processBackend is a RunningBackend over a `chaos backend` process. Its
// control methods are the control API's (the embedded *AdminAPI, set by
// the first start: a respawn serves the same addresses).
type processBackend struct {
	*AdminAPI
	rt     Process
	bin    string
	dir    string
	script fakebackends.Script // with defaults

	mu        sync.Mutex
	listen    string // MCP address pinned by the first start
	adminAddr string // control API address pinned by the first start
	cur       *backendProc
	ready     fakebackends.ReadyLine
	closed    bool
}

// backendProc is one spawned process.
type backendProc struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when Wait returned
	err    error         // Wait's error, set before exited closes
	stderr *TailBuffer
}

func (pb *processBackend) scriptPath() string { return filepath.Join(pb.dir, "script.yaml") }

func (pb *processBackend) writeScript() error {
	data, err := yaml.Marshal(&pb.script)
	if err != nil {
		return fmt.Errorf("harness: backend %q: encode script: %w", pb.script.Name, err)
	}
	if err := os.WriteFile(pb.scriptPath(), data, 0o600); err != nil {
		return fmt.Errorf("harness: backend %q: write script: %w", pb.script.Name, err)
	}
	return nil
}

func (pb *processBackend) argv(extra ...string) []string {
	args := append([]string{"backend", "--script", pb.scriptPath()}, extra...)
	return append(args, pb.rt.Args...)
}

// spawnArgv is argv plus the addresses pinned by an earlier start.
func (pb *processBackend) spawnArgv() []string {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	var pin []string
	if pb.listen != "" {
		pin = append(pin, "--listen", pb.listen)
	}
	if pb.adminAddr != "" {
		pin = append(pin, "--admin", pb.adminAddr)
	}
	return pb.argv(pin...)
}

// spawn starts a process and waits for its ready line. The caller holds no
// lock; spawn takes pb.mu only to publish the process.
func (pb *processBackend) spawn(ctx context.Context) error {
	ctx, cancel := WithDefaultTimeout(ctx, DefaultStartTimeout)
	defer cancel()
	name := pb.script.Name
	cmd := exec.Command(pb.bin, pb.spawnArgv()...)
	cmd.Env = append(os.Environ(), pb.rt.Env...)
	cmd.SysProcAttr = ChildProcAttr()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	p := &backendProc{cmd: cmd, exited: make(chan struct{}), stderr: NewTailBuffer(64 << 10)}
	cmd.Stderr = p.stderr
	if pb.rt.Stderr != nil {
		cmd.Stderr = io.MultiWriter(p.stderr, pb.rt.Stderr)
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("harness: start backend %q: %w", name, err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		_, _ = io.Copy(io.Discard, stdout) // keep the pipe drained
	}()
	go func() {
		p.err = cmd.Wait()
		close(p.exited)
	}()
	fail := func(err error) error {
		_ = cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(DefaultCloseTimeout):
		}
		return fmt.Errorf("harness: start backend %q: %w%s", name, err, QuoteTail(p.stderr.String()))
	}
	var rl fakebackends.ReadyLine
	select {
	case line, ok := <-lines:
		if !ok {
			select {
			case <-p.exited:
				return fail(fmt.Errorf("exited before its ready line (%v)", p.err))
			case <-ctx.Done():
				return fail(errors.New("closed its stdout without a ready line"))
			}
		}
		if err := json.Unmarshal([]byte(line), &rl); err != nil || rl.URL == "" || rl.Admin == "" {
			return fail(fmt.Errorf("bad ready line %q", line))
		}
	case <-ctx.Done():
		return fail(fmt.Errorf("no ready line: %w", ctx.Err()))
	}
	pb.mu.Lock()
	if pb.closed {
		pb.mu.Unlock()
		return fail(errors.New("closed while starting"))
	}
	defer pb.mu.Unlock()
	pb.cur, pb.ready = p, rl
	if pb.AdminAPI == nil {
		pb.AdminAPI = NewAdminAPI(rl.Admin, "").Named(pb.wrap)
	}
	// Pin the addresses so a respawn serves the same URLs.
	if u, err := url.Parse(rl.URL); err == nil {
		pb.listen = u.Host
	}
	if u, err := url.Parse(rl.Admin); err == nil {
		pb.adminAddr = u.Host
	}
	return nil
}

func (pb *processBackend) snapshot() (*backendProc, fakebackends.ReadyLine) {
	pb.mu.Lock()
	defer pb.mu.Unlock()
	return pb.cur, pb.ready
}

// PID is the current process id (0 when none runs).
func (pb *processBackend) PID() int {
	p, _ := pb.snapshot()
	if p == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Stderr returns the tail of the current process's stderr.
func (pb *processBackend) Stderr() string {
	p, _ := pb.snapshot()
	if p == nil {
		return ""
	}
	return p.stderr.String()
}

func (pb *processBackend) Name() string                      { return pb.script.Name }
func (pb *processBackend) URL() string                       { _, rl := pb.snapshot(); return rl.URL }
func (pb *processBackend) AdminURL() string                  { _, rl := pb.snapshot(); return rl.Admin }
func (pb *processBackend) Transport() fakebackends.Transport { return pb.script.Transport }

func (pb *processBackend) Info() BackendInfo {
	_, rl := pb.snapshot()
	return BackendInfo{Name: pb.script.Name, URL: rl.URL, AdminURL: rl.Admin, Transport: string(pb.script.Transport), Protocol: string(pb.script.Protocol)}
}

func (pb *processBackend) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("harness: %s backend %q: %w", op, pb.script.Name, err)
}

// signal sends sig to the current process.
func (pb *processBackend) signal(op string, sig syscall.Signal) error {
	p, _ := pb.snapshot()
	if p == nil {
		return pb.wrap(op, errors.New("no process"))
	}
	select {
	case <-p.exited:
		return pb.wrap(op, fmt.Errorf("process %d has exited (%v)", p.cmd.Process.Pid, p.err))
	default:
	}
	return pb.wrap(op, syscall.Kill(p.cmd.Process.Pid, sig))
}

// Kill sends SIGKILL and waits (bounded) until the process is gone.
func (pb *processBackend) Kill(ctx context.Context) error {
	if err := pb.signal("kill", syscall.SIGKILL); err != nil {
		return err
	}
	p, _ := pb.snapshot()
	return pb.waitExit(ctx, p, DefaultControlTimeout, "kill", "still running")
}

// waitExit waits until p has exited, bounded by ctx and d; else the error
// of op says how p is.
func (pb *processBackend) waitExit(ctx context.Context, p *backendProc, d time.Duration, op, how string) error {
	ctx, cancel := WithDefaultTimeout(ctx, d)
	defer cancel()
	select {
	case <-p.exited:
		return nil
	case <-ctx.Done():
		return pb.wrap(op, fmt.Errorf("process %d %s: %w", p.cmd.Process.Pid, how, ctx.Err()))
	}
}

// Pause sends SIGSTOP.
//
// SIGSTOP is asynchronous: on a loaded machine a thread of the backend can
// still answer a request just after kill(2) returns. Pause therefore waits
// (bounded by ctx and DefaultControlTimeout) until /proc shows the process
// stopped, where /proc exists.
func (pb *processBackend) Pause(ctx context.Context) error {
	if err := pb.signal("pause", syscall.SIGSTOP); err != nil {
		return err
	}
	p, _ := pb.snapshot()
	ctx, cancel := WithDefaultTimeout(ctx, DefaultControlTimeout)
	defer cancel()
	for {
		stopped, known := processStopped(p.cmd.Process.Pid)
		if stopped || !known {
			return nil
		}
		select {
		case <-ctx.Done():
			return pb.wrap("pause", fmt.Errorf("process %d not stopped: %w", p.cmd.Process.Pid, ctx.Err()))
		case <-time.After(time.Millisecond):
		}
	}
}

// processStopped reads every thread's state from /proc/PID/task/*/stat:
// stopped when all are stopped (T); known is false where /proc cannot tell.
func processStopped(pid int) (stopped, known bool) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false, false
	}
	for _, task := range tasks {
		f := ProcStatFields(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if len(f) == 0 {
			continue // the thread ended
		}
		if f[0] != "T" {
			return false, true
		}
	}
	return true, true
}

// ProcStatFields returns the fields of a /proc stat file (/proc/PID/stat,
// /proc/PID/task/TID/stat) that follow the command name, from the state
// on ("PID (comm) S ...": comm may hold spaces and parentheses), or nil
// when it cannot be read.
func ProcStatFields(path string) []string {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(s[i+1:])
}

// Resume sends SIGCONT.
func (pb *processBackend) Resume(context.Context) error { return pb.signal("resume", syscall.SIGCONT) }

// Exited reports whether the current process has exited, and its Wait
// error.
func (pb *processBackend) Exited() (bool, error) {
	p, _ := pb.snapshot()
	if p == nil {
		return true, nil
	}
	select {
	case <-p.exited:
		return true, p.err
	default:
		return false, nil
	}
}

// Respawn kills the current process (if it runs) and starts a new one on
// the same addresses. Faults set through the control API are lost: the new
// process starts from the script. An address taken meanwhile (another
// process's connection may take a freed port as its own, for as long as
// it lives) is tried again, respawnTries times in all.
func (pb *processBackend) Respawn(ctx context.Context) error {
	if err := pb.stop(ctx); err != nil {
		return err
	}
	for try := 1; ; try++ {
		err := pb.spawn(ctx)
		if err == nil || try == respawnTries || !strings.Contains(err.Error(), "address already in use") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(try) * 200 * time.Millisecond):
		}
	}
}

// respawnTries bounds how often Respawn starts a process whose address was
// taken (about 2 s of waiting in all).
const respawnTries = 5

// stop kills the current process and waits for it, bounded.
func (pb *processBackend) stop(ctx context.Context) error {
	p, _ := pb.snapshot()
	if p == nil {
		return nil
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	_ = p.cmd.Process.Kill()
	return pb.waitExit(ctx, p, DefaultCloseTimeout, "stop", "did not exit")
}

// Close kills the process, waits for it (bounded) and removes its files.
func (pb *processBackend) Close(ctx context.Context) error {
	pb.mu.Lock()
	if pb.closed {
		pb.mu.Unlock()
		return nil
	}
	pb.closed = true
	pb.mu.Unlock()
	err := pb.stop(ctx)
	_ = os.RemoveAll(pb.dir)
	return err
}

// stdioBackend is a stdio script run by the gateway itself: it only
// provides the command line.
type stdioBackend struct {
	pb *processBackend
}

func (sb *stdioBackend) notSupported(op string) error {
	return fmt.Errorf("harness: %s stdio backend %q: %w (the gateway owns its processes)", op, sb.pb.script.Name, ErrNotSupported)
}

func (sb *stdioBackend) Name() string                      { return sb.pb.script.Name }
func (sb *stdioBackend) URL() string                       { return "" }
func (sb *stdioBackend) AdminURL() string                  { return "" }
func (sb *stdioBackend) Transport() fakebackends.Transport { return fakebackends.TransportStdio }

// Command is the argv that serves the script on stdin/stdout.
func (sb *stdioBackend) Command() []string {
	return append([]string{sb.pb.bin}, sb.pb.argv("--stdio")...)
}

func (sb *stdioBackend) Info() BackendInfo {
	return BackendInfo{Name: sb.pb.script.Name, Transport: string(fakebackends.TransportStdio),
		Protocol: string(fakebackends.ProtocolLegacy), Command: sb.Command()}
}

func (sb *stdioBackend) SetFaults(context.Context, ...faults.Fault) error {
	return sb.notSupported("set faults on")
}
func (sb *stdioBackend) ClearFaults(context.Context) error { return sb.notSupported("clear faults of") }
func (sb *stdioBackend) ExpireSessions(context.Context) (int, error) {
	return 0, sb.notSupported("expire sessions of")
}
func (sb *stdioBackend) Restart(context.Context) error { return sb.notSupported("restart") }
func (sb *stdioBackend) Requests(context.Context) ([]fakebackends.RequestRecord, error) {
	return nil, sb.notSupported("read requests of")
}
func (sb *stdioBackend) Kill(context.Context) error   { return sb.notSupported("kill") }
func (sb *stdioBackend) Pause(context.Context) error  { return sb.notSupported("pause") }
func (sb *stdioBackend) Resume(context.Context) error { return sb.notSupported("resume") }

func (sb *stdioBackend) Close(context.Context) error {
	_ = os.RemoveAll(sb.pb.dir)
	return nil
}
