package containers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/network"
	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tcnetwork "github.com/testcontainers/testcontainers-go/network"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
)

// Faulter is what a container gives beyond runtimes.RunningBackend: the
// fault verbs only containers have. Backends and gateways started by this
// package implement it. Every method is bounded by its ctx and by
// runtimes.DefaultControlTimeout (a graceful stop by its grace on top).
type Faulter interface {
	// Kill sends SIGKILL; the container leaves the network's DNS.
	Kill(ctx context.Context) error
	// Pause freezes every process (cgroup freezer): sockets stay open,
	// nothing answers.
	Pause(ctx context.Context) error
	// Resume thaws a paused container.
	Resume(ctx context.Context) error
	// Stop stops the container gracefully (SIGTERM to tini, SIGKILL after
	// the grace).
	Stop(ctx context.Context) error
	// StartAgain starts a stopped or killed container and waits until it
	// serves again (same alias, same published ports).
	StartAgain(ctx context.Context) error
	// Disconnect takes the container off the topology's network (a
	// partition: peers' packets go nowhere).
	Disconnect(ctx context.Context) error
	// Reconnect puts it back on the network with its alias, on its old
	// address.
	Reconnect(ctx context.Context) error
	// ReconnectNewIP puts it back with its alias on an address it never had.
	ReconnectNewIP(ctx context.Context) error
	// IP is its current address on the topology's network.
	IP(ctx context.Context) (netip.Addr, error)
	// Logs returns the tail of its output (stdout and stderr).
	Logs(ctx context.Context) string
	// DownAt is when the container last went down (its process exited:
	// after Kill or Stop), as the engine recorded it (State.FinishedAt,
	// the host's clock). It fails while the container runs, or when the
	// engine recorded no exit.
	DownAt(ctx context.Context) (time.Time, error)
}

// ctr is one container of a topology and its fault verbs.
type ctr struct {
	t      *Topology
	alias  string
	id     string
	ports  map[int]int // container port → published 127.0.0.1 port
	ready  func(ctx context.Context) error
	mu     sync.Mutex
	oldIP  netip.Addr
	closed bool
}

// file is a file copied into a container before it starts.
type file struct {
	path string
	data string
}

// spec is what runContainer needs.
type spec struct {
	alias string
	image string
	cmd   []string
	env   map[string]string
	files []file
	ports []int // container ports to publish on 127.0.0.1
	// The container is ready when GET readyPath (with readyHeader) on the
	// published readyPort answers below HTTP 500 ("": at once).
	readyPort   int
	readyPath   string
	readyHeader http.Header
}

// runContainer starts a container on the topology's network with the
// alias, tini as PID 1 (a prompt SIGTERM), the run's labels and ports
// published on fixed 127.0.0.1 ports (they survive stop/start). A port
// taken between picking it and the engine binding it (another topology or
// process started at once) is picked again, twice at most.
func (t *Topology) runContainer(ctx context.Context, s spec) (*ctr, error) {
	for try := 0; ; try++ {
		c, err := t.runContainerOnce(ctx, s)
		if err == nil || try == 2 || ctx.Err() != nil || !portTaken(err) {
			return c, err
		}
	}
}

// freePort picks a free 127.0.0.1 port to publish on: the topology's
// pickPort (set by tests), else publishPort.
func (t *Topology) freePort() (int, error) {
	if t.pickPort != nil {
		return t.pickPort()
	}
	return publishPort()
}

// portTaken reports whether a start failed because a published port was
// taken.
func portTaken(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "port is already allocated") || strings.Contains(msg, "address already in use")
}

func (t *Topology) runContainerOnce(ctx context.Context, s spec) (*ctr, error) {
	e, err := t.engine(ctx)
	if err != nil {
		return nil, err
	}
	n, err := t.net.acquire(ctx, e)
	if err != nil {
		return nil, err
	}
	hostPorts := map[int]int{}
	bindings := network.PortMap{}
	var exposed []string
	for _, p := range s.ports {
		hp, err := t.freePort()
		if err != nil {
			_ = t.net.release(context.WithoutCancel(ctx), e)
			return nil, err
		}
		hostPorts[p] = hp
		port := network.MustParsePort(fmt.Sprintf("%d/tcp", p))
		bindings[port] = []network.PortBinding{{HostIP: netip.MustParseAddr("127.0.0.1"), HostPort: strconv.Itoa(hp)}}
		exposed = append(exposed, fmt.Sprintf("%d/tcp", p))
	}
	name := fmt.Sprintf("%s-%s-%s", n.name, s.alias, randomHex(2))
	opts := []testcontainers.ContainerCustomizer{
		testcontainers.WithName(name),
		testcontainers.WithCmd(s.cmd...),
		testcontainers.WithEnv(s.env),
		testcontainers.WithLabels(e.labels()),
		testcontainers.WithExposedPorts(exposed...),
		testcontainers.WithFiles(containerFiles(s.files)...),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			init := true
			hc.Init = &init
			hc.PortBindings = bindings
		}),
		tcnetwork.WithNetworkName([]string{s.alias}, n.name),
	}
	c, err := testcontainers.Run(ctx, s.image, opts...)
	if c != nil {
		owned.Store(c.GetContainerID(), struct{}{})
	}
	var cc *ctr
	if err == nil {
		cc = &ctr{t: t, alias: s.alias, id: c.GetContainerID(), ports: hostPorts}
		if s.readyPath != "" {
			cc.ready = targets.HTTPReady(fmt.Sprintf("http://127.0.0.1:%d%s", hostPorts[s.readyPort], s.readyPath), s.readyHeader, 2*time.Second)
		}
		err = cc.waitReady(ctx)
	}
	if err == nil {
		t.track(cc)
	}
	if err != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RemoveTimeout)
		defer cancel()
		logs := ""
		if c != nil {
			if !strings.Contains(err.Error(), "--- container output ---") { // waitReady's has it
				logs = tail(rctx, e, c.GetContainerID())
			}
			_, _ = e.cli.ContainerRemove(rctx, c.GetContainerID(), client.ContainerRemoveOptions{Force: true})
			owned.Delete(c.GetContainerID())
			_, _ = c.Inspect(rctx) // (not found) closes its client's idle connections
		} else {
			_, _ = e.cli.ContainerRemove(rctx, name, client.ContainerRemoveOptions{Force: true})
		}
		_ = t.net.release(rctx, e)
		_ = e.cli.Close()
		return nil, fmt.Errorf("containers: start %s (%s): %w%s", s.alias, s.image, err, logs)
	}
	return cc, nil
}

// containerFiles are files as testcontainers copies them: each start
// needs its own readers (a retried start too).
func containerFiles(fs []file) []testcontainers.ContainerFile {
	out := make([]testcontainers.ContainerFile, len(fs))
	for i, f := range fs {
		out[i] = testcontainers.ContainerFile{Reader: strings.NewReader(f.data), ContainerFilePath: f.path, FileMode: 0o644}
	}
	return out
}

// tail returns the last lines of a container's output, quoted for an
// error message ("" when there is none).
func tail(ctx context.Context, e *Engine, id string) string {
	rc, err := e.cli.ContainerLogs(ctx, id, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true, Tail: "30"})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var out strings.Builder // stdout and stderr, demultiplexed
	_, _ = stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 16<<10))
	s := strings.TrimSpace(out.String())
	if s == "" {
		return ""
	}
	return "\n--- container output ---\n" + s
}

func (c *ctr) wrap(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("containers: %s %s: %w", op, c.alias, err)
}

func (c *ctr) bounded(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}

func (c *ctr) Kill(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	_, err := c.t.e.cli.ContainerKill(ctx, c.id, client.ContainerKillOptions{Signal: "SIGKILL"})
	if err != nil {
		return c.wrap("kill", err)
	}
	// ContainerKill returns once the signal is sent; wait for the exit.
	for ctx.Err() == nil {
		st, err := c.state(ctx)
		if err == nil && !st.Running {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c.wrap("kill", fmt.Errorf("still running: %w", ctx.Err()))
}

func (c *ctr) Pause(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	_, err := c.t.e.cli.ContainerPause(ctx, c.id, client.ContainerPauseOptions{})
	return c.wrap("pause", err)
}

func (c *ctr) Resume(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	_, err := c.t.e.cli.ContainerUnpause(ctx, c.id, client.ContainerUnpauseOptions{})
	return c.wrap("resume", err)
}

// stopGrace is how long a graceful stop waits before SIGKILL.
const stopGrace = 5

func (c *ctr) Stop(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout+stopGrace*time.Second)
	defer cancel()
	grace := stopGrace
	_, err := c.t.e.cli.ContainerStop(ctx, c.id, client.ContainerStopOptions{Timeout: &grace})
	return c.wrap("stop", err)
}

func (c *ctr) StartAgain(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx, StartTimeout)
	defer cancel()
	if _, err := c.t.e.cli.ContainerStart(ctx, c.id, client.ContainerStartOptions{}); err != nil {
		return c.wrap("start", err)
	}
	return c.wrap("start", c.waitReady(ctx))
}

// Restart stops the container gracefully and starts it again.
func (c *ctr) Restart(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx, StartTimeout)
	defer cancel()
	grace := stopGrace
	if _, err := c.t.e.cli.ContainerRestart(ctx, c.id, client.ContainerRestartOptions{Timeout: &grace}); err != nil {
		return c.wrap("restart", err)
	}
	return c.wrap("restart", c.waitReady(ctx))
}

// waitReady polls the container's readiness check until it passes.
func (c *ctr) waitReady(ctx context.Context) error {
	if c.ready == nil {
		return nil
	}
	var last error
	for i := 1; ; i++ {
		if last = c.ready(ctx); last == nil {
			return nil
		}
		if i%10 == 0 { // a process that exited will never be ready
			if st, err := c.state(ctx); err == nil && !st.Running && !st.Restarting {
				return fmt.Errorf("exited (code %d) before it was ready (last: %v)%s", st.ExitCode, last, tail(context.WithoutCancel(ctx), c.t.e, c.id))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w (last: %v)%s", ctx.Err(), last, tail(context.WithoutCancel(ctx), c.t.e, c.id))
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (c *ctr) state(ctx context.Context) (*container.State, error) {
	res, err := c.t.e.cli.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil {
		return nil, err
	}
	if res.Container.State == nil {
		return nil, errors.New("no state")
	}
	return res.Container.State, nil
}

func (c *ctr) DownAt(ctx context.Context) (time.Time, error) {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	st, err := c.state(ctx)
	if err != nil {
		return time.Time{}, c.wrap("inspect", err)
	}
	at, err := downAt(st)
	return at, c.wrap("exit time of", err)
}

// downAt is when a container whose state is st went down (see
// Faulter.DownAt).
func downAt(st *container.State) (time.Time, error) {
	if st.Running || st.Paused || st.Restarting {
		return time.Time{}, fmt.Errorf("not down (status %s)", st.Status)
	}
	at, err := time.Parse(time.RFC3339Nano, st.FinishedAt)
	if err != nil {
		return time.Time{}, fmt.Errorf("FinishedAt %q: %w", st.FinishedAt, err)
	}
	if at.IsZero() {
		return time.Time{}, errors.New("no exit recorded")
	}
	return at, nil
}

func (c *ctr) IP(ctx context.Context) (netip.Addr, error) {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	res, err := c.t.e.cli.ContainerInspect(ctx, c.id, client.ContainerInspectOptions{})
	if err != nil {
		return netip.Addr{}, c.wrap("inspect", err)
	}
	name := c.t.networkName()
	if ns := res.Container.NetworkSettings; ns != nil {
		if ep := ns.Networks[name]; ep != nil && ep.IPAddress.IsValid() {
			return ep.IPAddress, nil
		}
	}
	return netip.Addr{}, c.wrap("inspect", fmt.Errorf("not on network %s", name))
}

func (c *ctr) Disconnect(ctx context.Context) error {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	if ip, err := c.IP(ctx); err == nil {
		c.mu.Lock()
		c.oldIP = ip
		c.mu.Unlock()
	}
	_, err := c.t.e.cli.NetworkDisconnect(ctx, c.t.networkName(), client.NetworkDisconnectOptions{Container: c.id, Force: true})
	return c.wrap("disconnect", err)
}

func (c *ctr) connect(ctx context.Context, ip netip.Addr) error {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	ep := &network.EndpointSettings{Aliases: []string{c.alias}}
	if ip.IsValid() {
		ep.IPAMConfig = &network.EndpointIPAMConfig{IPv4Address: ip}
	}
	for {
		_, err := c.t.e.cli.NetworkConnect(ctx, c.t.networkName(), client.NetworkConnectOptions{Container: c.id, EndpointConfig: ep})
		// The published port, released while disconnected, may be
		// held for a moment by another socket: retry within the bound.
		if err == nil || !portTaken(err) || faults.SleepCtx(ctx, nil, 250*time.Millisecond) != nil {
			return err
		}
	}
}

func (c *ctr) Reconnect(ctx context.Context) error {
	c.mu.Lock()
	ip := c.oldIP
	c.mu.Unlock()
	return c.wrap("reconnect", c.connect(ctx, ip))
}

func (c *ctr) ReconnectNewIP(ctx context.Context) error {
	ip, err := c.t.net.newIP()
	if err != nil {
		return c.wrap("reconnect", err)
	}
	return c.wrap("reconnect on "+ip.String(), c.connect(ctx, ip))
}

func (c *ctr) Logs(ctx context.Context) string {
	ctx, cancel := c.bounded(ctx, runtimes.DefaultControlTimeout)
	defer cancel()
	return tail(ctx, c.t.e, c.id)
}

// RemoveTimeout bounds removing one container (and, after the last, its
// network): a forced remove of a running container on a loaded 2-core
// machine was seen to take over 10 s.
const RemoveTimeout = 45 * time.Second

// CloseTimeout is RemoveTimeout (runtimes.CloseTimeouter).
func (c *ctr) CloseTimeout() time.Duration { return RemoveTimeout }

// remove removes the container with one forced remove (SIGKILL and
// remove in one engine call: a paused or frozen one too) and releases the
// network. Safe to call twice, and concurrently.
func (c *ctr) remove(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	ctx, cancel := c.bounded(ctx, RemoveTimeout)
	defer cancel()
	var errs []error
	if _, err := c.t.e.cli.ContainerRemove(ctx, c.id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
		errs = append(errs, c.wrap("remove", err))
	}
	owned.Delete(c.id)
	// testcontainers' own client for the container closed its idle
	// connections when Run returned (Start defers it); closing the
	// engine's ends its idle read loops, which would outlive the topology.
	errs = append(errs, c.t.net.release(ctx, c.t.e))
	_ = c.t.e.cli.Close()
	return errors.Join(errs...)
}
