package runner

import (
	"context"
	"fmt"
	"slices"

	"github.com/vmcp-chaos/vmcp-chaos/fakebackends"
	"github.com/vmcp-chaos/vmcp-chaos/harness"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
)

// Runtimes of RunConfig.Runtime.
const (
	// RuntimeDefault runs each scenario's backends where it says (in
	// process unless it needs processes).
	RuntimeDefault = ""
	// RuntimeContainer runs the HTTP backends of every scenario as
	// containers (published on 127.0.0.1, since the gateway may run
	// elsewhere); the container scenarios run the gateway in one too.
	RuntimeContainer = "container"
)

// ParseRuntime checks a --runtime / $VMCP_CHAOS_RUNTIME value.
func ParseRuntime(s string) (string, error) {
	switch s {
	case RuntimeDefault, "in-process", "default":
		return RuntimeDefault, nil
	case RuntimeContainer:
		return RuntimeContainer, nil
	}
	return "", fmt.Errorf("unknown runtime %q (want container, or in-process for the default)", s)
}

// containerize puts every HTTP backend of topo that runs in process into
// a container (one network for the topology). Process and stdio backends
// keep their runtime: their scenarios signal processes.
func containerize(topo *harness.Topology) {
	if topo.WrapTarget != nil {
		return // already a container topology
	}
	ct := containers.NewTopology()
	for i, b := range topo.Backends {
		if b.Script == nil || b.Script.Transport == fakebackends.TransportStdio {
			continue
		}
		switch b.Runtime.(type) {
		case nil, runtimes.InProcess:
			topo.Backends[i].Runtime = ct
		}
	}
}

// PrepareContainers connects to the Docker engine (a bounded probe) and
// builds the run's image when runtime is RuntimeContainer or any of
// selected is a container scenario, before the first scenario runs: no
// scenario pays for the build, and the engine's goroutines predate every
// scenario's leak snapshot. A failure never ends the run: the engine and
// the image keep it, and each scenario that needs them is skipped (no
// Docker, no static chaos binary) or fails (VMCP_CHAOS_REQUIRE_DOCKER=1,
// a failed build) with it when its topology starts, while the others run.
// It returns what it prepared or what will happen instead, for a progress
// line ("" when nothing was needed).
func PrepareContainers(ctx context.Context, selected []Scenario, runtime string) string {
	need := runtime == RuntimeContainer ||
		slices.ContainsFunc(selected, func(sc Scenario) bool { return sc.HasLabel(LabelContainer) })
	if !need {
		return ""
	}
	e, err := containers.Get(ctx)
	var img string
	if err == nil {
		img, err = e.Image(ctx)
	}
	switch {
	case containers.IsSkip(err):
		return "container scenarios will be skipped: " + err.Error()
	case err != nil:
		return "container scenarios will fail: " + err.Error()
	}
	return fmt.Sprintf("containers: run %s, image %s", e.RunID(), img)
}
