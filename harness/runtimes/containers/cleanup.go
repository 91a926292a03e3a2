package containers

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/moby/moby/client"

	"github.com/vmcp-chaos/vmcp-chaos/faults"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Labels on every container, network and image a run makes.
const (
	// LabelRun is the run's id.
	LabelRun = "vmcp-chaos.run"
	// LabelOwnerPID is the owning process's pid.
	LabelOwnerPID = "vmcp-chaos.owner-pid"
	// LabelOwnerStart is the owner's start time (clock ticks since boot,
	// /proc/PID/stat field 22), so a reused pid is not taken for the owner.
	LabelOwnerStart = "vmcp-chaos.owner-start"
	// LabelOwnerHost is the owner's hostname: pids mean something only on
	// the host (pid namespace) that made them, so other hosts sharing the
	// engine are never swept.
	LabelOwnerHost = "vmcp-chaos.owner-host"
)

// labels returns the labels of a resource of this run.
func (e *Engine) labels() map[string]string {
	host, _ := os.Hostname()
	pid := os.Getpid()
	return map[string]string{
		LabelRun:        e.runID,
		LabelOwnerPID:   strconv.Itoa(pid),
		LabelOwnerStart: processStart(pid),
		LabelOwnerHost:  host,
	}
}

// processStart reads a process's start time from /proc ("" if unknown).
func processStart(pid int) string {
	// Fields after the command: state is field 3, starttime field 22.
	if f := runtimes.ProcStatFields(fmt.Sprintf("/proc/%d/stat", pid)); len(f) >= 20 {
		return f[19]
	}
	return ""
}

// ownerAlive reports whether the owner named by a resource's labels still
// runs. Resources of another host are treated as alive (never swept).
func ownerAlive(l map[string]string) bool {
	host, _ := os.Hostname()
	if l[LabelOwnerHost] != host {
		return true
	}
	pid, err := strconv.Atoi(l[LabelOwnerPID])
	if err != nil || pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && errors.Is(err, syscall.ESRCH) {
		return false
	}
	if start := l[LabelOwnerStart]; start != "" {
		if now := processStart(pid); now != "" && now != start {
			return false // the pid was reused
		}
	}
	return true
}

// SweepDead removes every container, network and image labelled by an
// owner on this host that no longer runs, and returns what it removed
// ("container NAME", "network NAME", "image ID").
func (e *Engine) SweepDead(ctx context.Context) ([]string, error) {
	var removed []string
	var mu sync.Mutex
	err := e.remove(ctx, client.Filters{}.Add("label", LabelRun), func(l map[string]string) bool { return !ownerAlive(l) },
		func(what string) { mu.Lock(); removed = append(removed, what); mu.Unlock() })
	return removed, err
}

// Swept is what the sweep at connection removed (see Get).
func (e *Engine) Swept() []string { return slices.Clone(e.swept) }

// RemoveRun removes every container, network and image of run id.
func (e *Engine) RemoveRun(ctx context.Context, id string) error {
	return e.remove(ctx, client.Filters{}.Add("label", LabelRun+"="+id), func(map[string]string) bool { return true }, func(string) {})
}

// Leftovers lists the containers, networks and images of run id (for
// tests: after a run, it must be empty). Images include the intermediate
// ones of its builds (labelled too: see Image), so one a failed build
// left dangling is listed.
func (e *Engine) Leftovers(ctx context.Context, id string) ([]string, error) {
	f := client.Filters{}.Add("label", LabelRun+"="+id)
	var out []string
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, c := range cs.Items {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	ns, err := e.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, n := range ns.Items {
		out = append(out, "network "+n.Name)
	}
	is, err := e.cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, i := range is.Items {
		if len(i.RepoTags) == 0 || slices.Equal(i.RepoTags, []string{"<none>:<none>"}) {
			out = append(out, "untagged image "+i.ID)
		} else {
			out = append(out, "image "+strings.Join(i.RepoTags, ",")+" "+i.ID)
		}
	}
	return out, nil
}

// remove removes containers (forced), then networks, then images matching
// filter whose labels satisfy pick, telling removed what went. A request
// the engine was serving when its run died (a container create) can
// complete after the containers were listed: the image it uses is then
// only untagged, not removed. So what is left is looked for again, and
// removed, up to twice more, half a second apart.
func (e *Engine) remove(ctx context.Context, f client.Filters, pick func(map[string]string) bool, removed func(string)) error {
	err := e.removeOnce(ctx, f, pick, removed)
	for range 2 {
		if !e.anyLeft(ctx, f, pick) || faults.SleepCtx(ctx, nil, 500*time.Millisecond) != nil {
			break
		}
		err = e.removeOnce(ctx, f, pick, removed)
	}
	return err
}

// anyLeft reports whether a container or image matching filter, its
// labels satisfying pick, is still there (false when it cannot tell).
func (e *Engine) anyLeft(ctx context.Context, f client.Filters, pick func(map[string]string) bool) bool {
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return false
	}
	for _, c := range cs.Items {
		if pick(c.Labels) {
			return true
		}
	}
	is, err := e.cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
	if err != nil {
		return false
	}
	for _, i := range is.Items {
		if pick(i.Labels) {
			return true
		}
	}
	return false
}

// removeOnce is one pass of remove.
func (e *Engine) removeOnce(ctx context.Context, f client.Filters, pick func(map[string]string) bool, removed func(string)) error {
	cs, err := e.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: f})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	// Containers in parallel, each with one forced remove.
	errs := make([]error, len(cs.Items))
	var wg sync.WaitGroup
	for i, c := range cs.Items {
		if pick(c.Labels) {
			wg.Go(func() {
				if _, err := e.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true}); err != nil && !isNotFound(err) {
					errs[i] = fmt.Errorf("remove container %s: %w", c.ID[:12], err)
				} else {
					removed("container " + strings.TrimPrefix(strings.Join(c.Names, ","), "/"))
				}
			})
		}
	}
	wg.Wait()
	ns, err := e.cli.NetworkList(ctx, client.NetworkListOptions{Filters: f})
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("list networks: %w", err))...)
	}
	for _, n := range ns.Items {
		if pick(n.Labels) {
			if err := e.removeNetwork(ctx, n.ID); err != nil {
				errs = append(errs, fmt.Errorf("remove network %s: %w", n.Name, err))
			} else {
				removed("network " + n.Name)
			}
		}
	}
	return errors.Join(append(errs, e.removeImages(ctx, f, pick, removed))...)
}

// removeNetwork removes network id. The engine releases a removed
// container's endpoint asynchronously: a remove right after the
// containers' may find one still attached ("has active endpoints"), so
// it is tried again, a few times, within ctx.
func (e *Engine) removeNetwork(ctx context.Context, id string) error {
	var err error
	for try := range 5 {
		if _, err = e.cli.NetworkRemove(ctx, id, client.NetworkRemoveOptions{}); err == nil || isNotFound(err) {
			return nil
		}
		if try < 4 && faults.SleepCtx(ctx, nil, time.Duration(try+1)*200*time.Millisecond) != nil {
			break
		}
	}
	return err
}

// removeImages removes the images matching filter whose labels satisfy
// pick, children first (a build's intermediate images are labelled too, and
// an image with a child cannot be removed), in rounds until none is left.
func (e *Engine) removeImages(ctx context.Context, f client.Filters, pick func(map[string]string) bool, removedFn func(string)) error {
	var errs []error
	for range 8 {
		is, err := e.cli.ImageList(ctx, client.ImageListOptions{All: true, Filters: f})
		if err != nil {
			return fmt.Errorf("list images: %w", err)
		}
		parents := map[string]bool{}
		for _, i := range is.Items {
			parents[i.ParentID] = true
		}
		errs = errs[:0]
		removed := 0
		for _, i := range is.Items {
			if !pick(i.Labels) || parents[i.ID] {
				continue
			}
			if _, err := e.cli.ImageRemove(ctx, i.ID, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil && !isNotFound(err) {
				errs = append(errs, fmt.Errorf("remove image %s: %w", i.ID, err))
			} else {
				removed++
				name := strings.TrimPrefix(i.ID, "sha256:")[:12]
				if len(i.RepoTags) > 0 && i.RepoTags[0] != "<none>:<none>" {
					name = i.RepoTags[0]
				}
				removedFn("image " + name)
			}
		}
		if removed == 0 {
			break
		}
	}
	return errors.Join(errs...)
}

func isNotFound(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "No such") || strings.Contains(err.Error(), "not found"))
}

// callerOwnsSignals is set by LeaveSignalsToCaller.
var callerOwnsSignals atomic.Bool

// LeaveSignalsToCaller says the process handles SIGINT and SIGTERM itself
// and removes the run's resources through ShutdownDefault (the chaos
// command line, which must exit 130 having written its results): the
// Engine then installs no signal handler of its own. Without it (tests),
// the Engine removes its resources on a signal and delivers it again.
func LeaveSignalsToCaller() { callerOwnsSignals.Store(true) }

// installSignalCleanup removes the run's resources on SIGINT or SIGTERM,
// then delivers the signal again with the handler gone, so the process
// ends (or its own handler runs) as it would have. It does nothing once
// LeaveSignalsToCaller was called: re-delivering the signal would kill a
// process that is still writing its report (exit 143, partial files).
func installSignalCleanup(e *Engine) {
	if callerOwnsSignals.Load() {
		return
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	go func() {
		sig := <-ch
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		if err := e.RemoveRun(ctx, e.runID); err != nil {
			fmt.Fprintf(os.Stderr, "containers: cleanup on %s: %v\n", sig, err)
		}
		cancel()
		signal.Stop(ch)
		if s, ok := sig.(syscall.Signal); ok {
			_ = syscall.Kill(os.Getpid(), s)
		}
	}()
}
