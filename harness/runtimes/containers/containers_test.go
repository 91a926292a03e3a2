package containers

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/targets"
	"github.com/vmcp-chaos/vmcp-chaos/internal/hostslot"
	"github.com/vmcp-chaos/vmcp-chaos/internal/testpar"
)

// helperEnv makes the test binary a helper run (see TestMain).
const helperEnv = "CONTAINERS_TEST_HELPER"

// parallelTests is the package's default -test.parallel (see
// internal/testpar).
const parallelTests = 8

func TestMain(m *testing.M) {
	switch os.Getenv(helperEnv) {
	case "hold":
		os.Exit(helperHold())
	case "start":
		os.Exit(helperStart())
	case "probe":
		os.Exit(helperProbe())
	}
	// The host-wide container slots, not -test.parallel, bound the tests
	// that drive the engine (engineT); the others only wait.
	testpar.Default(parallelTests)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var before []string
	if e, err := Get(ctx); err == nil {
		before, _ = e.DanglingImages(ctx)
	}
	code := m.Run()
	ctx, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	if err := ShutdownDefault(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "shutdown:", err)
		code = 1
	}
	// Nothing of this run is left: no container, network or image
	// labelled with it, and no image its builds made left dangling.
	if e, err := Get(ctx); err == nil {
		if left, err := e.Leftovers(ctx, e.RunID()); err != nil || len(left) > 0 {
			fmt.Fprintf(os.Stderr, "left behind by run %s: %v %v\n", e.RunID(), left, err)
			code = 1
		}
		if after, err := e.DanglingImages(ctx); err == nil {
			if n := newIDs(before, after); len(n) > 0 {
				// Not this run's (Leftovers says so): another run on the
				// same engine made them.
				fmt.Fprintf(os.Stderr, "dangling images that appeared during the run, not made by it: %v\n", n)
			}
		}
	}
	os.Exit(code)
}

// newIDs lists the ids in after that are not in before.
func newIDs(before, after []string) []string {
	var out []string
	for _, id := range after {
		if !slices.Contains(before, id) {
			out = append(out, id)
		}
	}
	return out
}

// engineT returns the engine or skips (fails with VMCP_CHAOS_REQUIRE_DOCKER=1),
// holding one of the host-wide container slots until the test ends: the
// tests that drive the engine run side by side, and beside other suites'
// container scenarios (see topologySlots).
func engineT(t *testing.T) *Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := Get(ctx)
	if IsSkip(err) {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	n, err := topologySlots()
	if err != nil {
		t.Fatal(err)
	}
	slotCtx, cancelSlot := context.WithTimeout(context.Background(), slotWait)
	defer cancelSlot()
	release, err := hostslot.Acquire(slotCtx, topologySlotKind, n)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(release) // after the test's own cleanups (LIFO): its containers are gone
	if _, err := e.Image(ctx); err != nil {
		t.Fatal(err)
	}
	return e
}

func script(name string, tr fakebackends.Transport) *fakebackends.Script {
	return &fakebackends.Script{Name: name, Transport: tr, Protocol: fakebackends.ProtocolAuto,
		Tools: []fakebackends.ToolSpec{{Name: "echo", Description: "Echo"}}}
}

// startEnv starts beta (and alpha) as containers behind a chaos vmcp
// gateway container.
func startEnv(t *testing.T, ct *Topology, callTimeout time.Duration) *harness.Env {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	env, err := harness.Start(ctx, harness.Topology{
		Name: t.Name(),
		Backends: []harness.BackendSpec{
			{Script: script("alpha", fakebackends.TransportStreamableHTTP), Runtime: ct},
			{Script: script("beta", fakebackends.TransportSSE), Runtime: ct},
		},
		WrapTarget: ct.WrapTarget, GatewayCallTimeout: callTimeout,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Close(context.Background()); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return env
}

// TestFaultVerbs drives every verb through a real gateway container and
// checks what a client sees.
func TestFaultVerbs(t *testing.T) {
	t.Parallel()
	e := engineT(t)
	ct := NewTopology()
	env := startEnv(t, ct, 1500*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := env.Client(ctx, history.RevisionLegacy, history.WithCallTimeout(10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ok := func(why string) {
		t.Helper()
		if call := c.CallTool(ctx, "beta_echo", nil); call.Outcome != history.OutcomeOK {
			t.Fatalf("%s: beta_echo %s after %s: %s", why, call.Outcome, call.Took(), call.Text())
		}
	}
	fails := func(why string, max time.Duration) *history.Call {
		t.Helper()
		call := c.CallTool(ctx, "beta_echo", nil)
		if call.Outcome == history.OutcomeOK || call.Outcome == history.OutcomeTimeout || call.Took() > max {
			t.Fatalf("%s: beta_echo %s after %s (want a gateway error within %s): %s", why, call.Outcome, call.Took(), max, call.Text())
		}
		return call
	}
	eventually := func(why string) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			call := c.CallTool(ctx, "beta_echo", nil)
			if call.Outcome == history.OutcomeOK {
				return
			}
			t.Logf("%s: %s after %s: %s", why, call.Outcome, call.Took(), call.Text())
			time.Sleep(100 * time.Millisecond)
		}
		if c3, err := env.Client(ctx, history.RevisionLegacy); err == nil {
			call := c3.CallTool(ctx, "beta_echo", nil)
			t.Logf("a new session: %s after %s: %s", call.Outcome, call.Took(), call.Text())
		}
		t.Fatalf("%s: beta never answered again", why)
	}
	ok("start")
	b := env.Backend("beta").(*Backend)
	gw := env.Gateway().(*RunningGateway)

	if at, err := b.DownAt(ctx); err == nil {
		t.Fatalf("DownAt of a running container: %s, want an error", at)
	}
	killed := time.Now()
	if err := b.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	// The engine's exit time is within the kill (the host's clock; 100 ms
	// for the engine's own rounding).
	if at, err := b.DownAt(ctx); err != nil || at.Before(killed.Add(-100*time.Millisecond)) || at.After(time.Now()) {
		t.Fatalf("DownAt after a kill begun at %s: %s, %v", killed, at, err)
	}
	fails("killed", 1500*time.Millisecond+time.Second)
	if err := b.StartAgain(ctx); err != nil {
		t.Fatal(err)
	}
	eventually("after start")

	if err := b.Pause(ctx); err != nil {
		t.Fatal(err)
	}
	fails("paused", 1500*time.Millisecond+2*time.Second)
	if err := b.Resume(ctx); err != nil {
		t.Fatal(err)
	}
	eventually("after resume")

	ip0, err := b.IP(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Disconnect(ctx); err != nil {
		t.Fatal(err)
	}
	fails("disconnected", 1500*time.Millisecond+2*time.Second)
	if err := b.ReconnectNewIP(ctx); err != nil {
		t.Fatal(err)
	}
	ip1, err := b.IP(ctx)
	if err != nil || ip1 == ip0 {
		t.Fatalf("new IP %v (was %v): %v", ip1, ip0, err)
	}
	eventually("after reconnect on " + ip1.String())

	url := gw.MCPURL()
	if err := gw.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if gw.MCPURL() != url {
		t.Fatalf("gateway URL moved: %s → %s", url, gw.MCPURL())
	}
	c2, err := env.Client(ctx, history.RevisionLegacy)
	if err != nil {
		t.Fatal(err)
	}
	if call := c2.CallTool(ctx, "beta_echo", nil); call.Outcome != history.OutcomeOK {
		t.Fatalf("new session after gateway restart: %s %s", call.Outcome, call.Text())
	}
	if left, _ := e.Leftovers(ctx, e.RunID()); len(left) < 4 {
		t.Fatalf("want 3 containers and a network labelled with the run, got %v", left)
	}
}

// TestNothingLeftAfterSIGKILL: a run killed with SIGKILL leaves its
// containers and network; the next run's start sweeps them, and spares
// this live run's: its image (the parallel tests of this run add and
// remove their containers and networks meanwhile; the image stays, and
// the sweep picks images by their run as it picks the rest).
func TestNothingLeftAfterSIGKILL(t *testing.T) {
	t.Parallel()
	e := engineT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var runID string
	select {
	case l := <-lines:
		runID = strings.TrimPrefix(l, "run ")
	case <-time.After(90 * time.Second):
		t.Fatal("the helper run did not start its topology")
	}
	if runID == "" {
		t.Fatal("the helper run failed")
	}
	left, err := e.Leftovers(ctx, runID)
	if err != nil || len(left) < 3 {
		t.Fatalf("the helper run %s holds %v (want its containers, network and image): %v", runID, left, err)
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	if left, _ := e.Leftovers(ctx, runID); len(left) == 0 {
		t.Fatal("SIGKILL left nothing to sweep: the test proves nothing")
	}
	// This process is a live run on the same host: the sweep spares it.
	mine, err := e.Leftovers(ctx, e.RunID())
	if err != nil || len(mine) == 0 {
		t.Fatalf("this run holds %v (want at least its image): %v", mine, err)
	}
	next := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	next.Env = append(os.Environ(), helperEnv+"=start")
	if b, err := next.CombinedOutput(); err != nil {
		t.Fatalf("next run: %v\n%s", err, b)
	}
	if left, err := e.Leftovers(ctx, runID); err != nil || len(left) > 0 {
		t.Fatalf("after the next run started, run %s still has %v (%v)", runID, left, err)
	}
	still, err := e.Leftovers(ctx, e.RunID())
	images := func(rs []string) []string {
		return slices.Sorted(slices.Values(slices.DeleteFunc(slices.Clone(rs), func(r string) bool { return !strings.HasPrefix(r, "image ") })))
	}
	if err != nil || len(images(mine)) == 0 || !slices.Equal(images(still), images(mine)) {
		t.Fatalf("the next run's sweep touched this live run's image: had %v, now %v (%v)", mine, still, err)
	}
}

// TestSIGTERMRemovesOwn: SIGTERM removes the run's own resources.
func TestSIGTERMRemovesOwn(t *testing.T) {
	t.Parallel()
	e := engineT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"=hold")
	out, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	sc := bufio.NewScanner(out)
	if !sc.Scan() {
		t.Fatal("the helper run did not start")
	}
	runID := strings.TrimPrefix(sc.Text(), "run ")
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the helper did not exit on SIGTERM")
	}
	if left, err := e.Leftovers(ctx, runID); err != nil || len(left) > 0 {
		t.Fatalf("after SIGTERM run %s still has %v (%v)", runID, left, err)
	}
}

// helperHold starts a topology, prints its run id and waits to be killed.
func helperHold() int {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e, err := Get(ctx)
	if err != nil {
		fmt.Println("run ")
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ct := NewTopology()
	if _, err := ct.Start(ctx, script("beta", fakebackends.TransportStreamableHTTP)); err != nil {
		fmt.Println("run ")
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println("run " + e.RunID())
	time.Sleep(2 * time.Minute)
	return 0
}

// helperStart is the next run: it only connects (which sweeps) and shuts
// its own resources down.
func helperStart() int {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := Get(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := ShutdownDefault(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// TestPortTakenIsPickedAgain: a published port taken between picking it
// and the engine binding it (here: held by this process) is picked again.
// The container it starts is this process's (Owns) until it is removed.
func TestPortTakenIsPickedAgain(t *testing.T) {
	t.Parallel()
	engineT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	taken := ln.Addr().(*net.TCPAddr).Port
	var picks atomic.Int32
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ct := NewTopology()
	ct.pickPort = func() (int, error) {
		if picks.Add(1) == 1 {
			return taken, nil
		}
		return targets.FreePort()
	}
	b, err := ct.Start(ctx, script("beta", fakebackends.TransportStreamableHTTP))
	if err != nil {
		t.Fatalf("start with a taken port: %v", err)
	}
	defer func() { _ = b.Close(context.Background()) }()
	if n := picks.Load(); n < 3 {
		t.Fatalf("%d ports picked: the taken one was not met (the test proves nothing)", n)
	}
	if strings.Contains(b.(*Backend).HostURL(), fmt.Sprintf(":%d/", taken)) {
		t.Fatalf("the backend got the taken port %d", taken)
	}
	id := b.(*Backend).id
	if !Owns(id) || !OwnsAny() {
		t.Errorf("a live container %s is not this process's: Owns %v, OwnsAny %v", id, Owns(id), OwnsAny())
	}
	if err := b.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if Owns(id) {
		t.Errorf("a removed container %s is still this process's", id)
	}
}

// TestExitedContainerFailsFast: a container whose process exits before it
// is ready fails its start at once, with its exit code and output, instead
// of waiting out StartTimeout.
func TestExitedContainerFailsFast(t *testing.T) {
	t.Parallel()
	engineT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	g := &Gateway{Topology: NewTopology(), TargetName: "exits", Command: []string{"no-such-command"}}
	start := time.Now()
	gw, err := g.Start(ctx, targets.TopologyInfo{})
	took := time.Since(start)
	if err == nil {
		_ = gw.Close(ctx)
		t.Fatal("a gateway that exits at once started")
	}
	t.Logf("after %s: %v", took, err)
	for _, want := range []string{"exited (code 2) before it was ready", `unknown command "no-such-command"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q", want)
		}
	}
	if took > 30*time.Second {
		t.Errorf("the start failed after %s (StartTimeout %s): the exit was not noticed", took, StartTimeout)
	}
}
