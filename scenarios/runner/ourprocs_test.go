package runner

import (
	"os"
	"strconv"
	"testing"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
)

// The container engine's CPU counts as this process's only when every
// holder of the host's container slots is in its tree: with this process
// the holder, treeTicks adds at least the engine daemons' CPU time (they
// only grow; shims end with their containers); with a holder outside the
// tree (pid 1), or no holder, it adds nothing.
func TestEngineCountsWhenEveryHolderIsOurs(t *testing.T) {
	t.Parallel()
	var engineTicks int64
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		// The daemons only: shims come and go with containers.
		if comm := statComm(b); err != nil || comm != "dockerd" && comm != "containerd" {
			continue
		}
		if _, ticks, ok := parseProcStat(b); ok {
			engineTicks += ticks
		}
	}
	if engineTicks == 0 {
		if os.Getenv(containers.RequireDockerEnv) == "1" {
			t.Fatalf("no container engine daemon (dockerd, containerd) with CPU time here, and $%s=1", containers.RequireDockerEnv)
		}
		t.Skip("no container engine daemon (dockerd, containerd) with CPU time here")
	}
	me := os.Getpid()
	alone, ok1 := treeTicks(me, beyondTree{})
	notOurs, ok2 := treeTicks(me, beyondTree{slotHolders: []int{me, 1}})
	ours, ok3 := treeTicks(me, beyondTree{slotHolders: []int{me}})
	if !ok1 || !ok2 || !ok3 {
		t.Fatal("treeTicks of this process failed")
	}
	// This process's own time grows between the calls: bounds, not equality.
	if notOurs-alone >= engineTicks {
		t.Errorf("with a holder outside the tree, the engine counted: %d ticks alone, %d (engine %d)", alone, notOurs, engineTicks)
	}
	if ours-alone < engineTicks {
		t.Errorf("with every holder in the tree, the engine did not count: %d ticks alone, %d (engine %d)", alone, ours, engineTicks)
	}
}

func TestStatComm(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1451 (dockerd) S 1 1451":  "dockerd",
		"7 (containerd-shi) S 1 7": "containerd-shi",
		"9 (a (b) c) R 1 9":        "a (b) c",
		"garbage":                  "",
		"3 ) x (":                  "",
	} {
		if got := statComm([]byte(in)); got != want {
			t.Errorf("statComm(%q) = %q, want %q", in, got, want)
		}
	}
}
