package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/hostslot"
)

// enterWithin bounds how long a scenario that should enter a gate may
// take to: generous, the tests run beside the scenarios.
const enterWithin = 10 * time.Second

// entered reports whether Enter returns within d (then it leaves at once
// unless keep).
func entered(t *testing.T, g *Gate, sc Scenario, runtime string, d time.Duration) (leave func(), ok bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	leave, _, err := g.Enter(ctx, sc, runtime)
	if err != nil {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Enter %s: %v", sc.Name, err)
		}
		return nil, false
	}
	return leave, true
}

func TestGateBoundsInProcessScenarios(t *testing.T) {
	t.Parallel() // its own gate, its pressure and others' use given: the machine's load cannot change what it sees
	g := NewGate(2)
	g.pressure = func() (float64, bool) { return 0, true }
	plain := Scenario{Name: "wrapping/legacy/streamable-http"}
	l1, ok1 := entered(t, g, plain, "", enterWithin)
	l2, ok2 := entered(t, g, plain, "", enterWithin)
	if !ok1 || !ok2 {
		t.Fatal("two scenarios of a gate of 2 did not both enter")
	}
	if _, ok := entered(t, g, plain, "", 200*time.Millisecond); ok {
		t.Fatal("a third scenario entered a gate of 2")
	}
	l1()
	l2()
}

// A scenario of LaneAlone takes the floor's slots, one at a time, and
// starts on a calm CPU; while it runs no other scenario enters unless the
// CPU is calm.
func TestGateLoadScenarioTakesTheFloor(t *testing.T) {
	t.Parallel() // its own gate, its pressure and others' use given: the machine's load cannot change what it sees
	g := NewGate(6)
	g.floor = 2
	var pressure atomic.Int64
	g.pressure = func() (float64, bool) { return float64(pressure.Load()), true }
	g.others = busyOthers
	plain := Scenario{Name: "wrapping/legacy/streamable-http"}
	alone := Scenario{Name: "load/legacy/streamable-http", Labels: []string{LabelLoad}}

	pressure.Store(GatePressure)
	if _, ok := entered(t, g, alone, "", 2*pressurePoll); ok {
		t.Fatal("a scenario of LaneAlone entered an idle gate while the CPU was contended")
	}
	pressure.Store(0)
	l1, ok := entered(t, g, plain, "", enterWithin)
	if !ok {
		t.Fatal("a scenario did not enter an idle gate")
	}
	l2, ok := entered(t, g, plain, "", enterWithin)
	if !ok {
		t.Fatal("a second scenario did not enter a gate of 6")
	}
	la, ok := entered(t, g, alone, "", enterWithin)
	if !ok {
		t.Fatal("a scenario of LaneAlone did not enter beside two others in a gate of 6 (4 slots free)")
	}
	if _, ok := entered(t, g, alone, "", 2*pressurePoll); ok {
		t.Fatal("a second scenario of LaneAlone entered beside the first")
	}
	l2()
	pressure.Store(GatePressure)
	if _, ok := entered(t, g, plain, "", 2*pressurePoll); ok {
		t.Fatal("a scenario entered beside one of LaneAlone while the CPU was contended")
	}
	pressure.Store(0)
	l3, ok := entered(t, g, plain, "", enterWithin)
	if !ok {
		t.Fatal("a scenario did not enter beside one of LaneAlone once the CPU was calm")
	}
	l3()
	time.Sleep(50 * time.Millisecond)
	la()
	la2, ok := entered(t, g, alone, "", enterWithin)
	if !ok {
		t.Fatal("a scenario of LaneAlone did not enter once the first left")
	}
	la2()
	l1()
	if held := g.Held(); held < 2*50*time.Millisecond {
		t.Errorf("Held %s: the alone scenario held two slots for at least 50 ms", held)
	}
	if by := g.HeldBy(); len(by) != 2 || by[0].Name != alone.Name {
		t.Errorf("HeldBy %v: want the load scenario first, then the plain one", by)
	}
}

// Container scenarios take a host-wide slot, not the gate's.
func TestContainerScenariosTakeHostSlots(t *testing.T) {
	kind := fmt.Sprintf("test-container-%d-%d", os.Getpid(), time.Now().UnixNano())
	old := containerSlotKind
	containerSlotKind = kind
	t.Cleanup(func() {
		containerSlotKind = old
		hostslot.RemoveKind(kind)
	})
	oldEngine := containerEngine
	containerEngine = func(context.Context) error { return nil }
	t.Cleanup(func() { containerEngine = oldEngine })
	t.Setenv(ContainerSlotsEnv, "1")
	g := NewGate(1)
	container := Scenario{Name: "container-kill/legacy", Labels: []string{LabelContainer}}
	plain := Scenario{Name: "wrapping/legacy/streamable-http"}
	lc, ok := entered(t, g, container, "", enterWithin)
	if !ok {
		t.Fatal("a container scenario did not get a free host slot")
	}
	if _, ok := entered(t, g, plain, RuntimeContainer, 200*time.Millisecond); ok {
		t.Fatal("a scenario on the container runtime entered while the only host slot was held")
	}
	lp, ok := entered(t, g, plain, "", enterWithin)
	if !ok {
		t.Fatal("an in-process scenario waited for a host container slot")
	}
	lp()
	lc()
	if lc2, ok := entered(t, g, container, "", enterWithin); !ok {
		t.Fatal("the host slot was not given back")
	} else {
		lc2()
	}

	t.Setenv(ContainerSlotsEnv, "0")
	if _, _, err := g.Enter(context.Background(), container, ""); err == nil || !strings.Contains(err.Error(), ContainerSlotsEnv) {
		t.Errorf("$%s=0: %v, want an error naming it", ContainerSlotsEnv, err)
	}
}

// Over its floor, a gate admits no scenario while the CPU is contended;
// at or under it, it does.
func TestGateWaitsOnPressure(t *testing.T) {
	t.Parallel() // its own gate, its pressure and others' use given: the machine's load cannot change what it sees
	var pct atomic.Int64
	pct.Store(GatePressure + 10)
	g := NewGate(4)
	g.floor = 1
	g.pressure = func() (float64, bool) { return float64(pct.Load()), true }
	g.others = busyOthers
	plain := Scenario{Name: "wrapping/legacy/streamable-http"}
	l1, ok := entered(t, g, plain, "", enterWithin)
	if !ok {
		t.Fatal("the floor's scenario waited on the pressure")
	}
	if _, ok := entered(t, g, plain, "", 2*pressurePoll); ok {
		t.Fatal("a scenario over the floor entered while the CPU was contended")
	}
	if g.Throttled() < 2*pressurePoll-50*time.Millisecond {
		t.Errorf("Throttled %s, want the wait counted", g.Throttled())
	}
	got := make(chan bool, 1)
	go func() {
		l, ok := entered(t, g, plain, "", 5*time.Second)
		got <- ok
		if ok {
			l()
		}
	}()
	time.Sleep(pressurePoll)
	pct.Store(GatePressure - 1)
	if !<-got {
		t.Fatal("a waiting scenario did not enter once the pressure fell")
	}
	l1()
	// Unreadable pressure: no throttle.
	g.pressure = func() (float64, bool) { return 0, false }
	pct.Store(100)
	a, ok1 := entered(t, g, plain, "", enterWithin)
	b, ok2 := entered(t, g, plain, "", enterWithin)
	if !ok1 || !ok2 {
		t.Fatal("without pressure information the gate throttled")
	}
	a()
	b()
}

// busyOthers says other processes use the whole machine: the pressure is
// theirs.
func busyOthers() (float64, bool) { return 100, true }

// Over its floor, a gate whose CPU pressure is its own (the other
// processes use under OthersPressure of the machine) does not throttle,
// unless a load scenario of the gate is running; the others' use
// unknown, it does.
func TestGateIgnoresItsOwnPressure(t *testing.T) {
	t.Parallel() // its own gate, its pressure and others' use given: the machine's load cannot change what it sees
	var others atomic.Int64
	g := NewGate(6)
	g.floor = 1
	g.pressure = func() (float64, bool) { return 100, true }
	g.others = func() (float64, bool) { return float64(others.Load()), true }
	plain := Scenario{Name: "wrapping/legacy/streamable-http"}
	alone := Scenario{Name: "load/legacy/streamable-http", Labels: []string{LabelLoad}}
	l1, ok1 := entered(t, g, plain, "", enterWithin)
	l2, ok2 := entered(t, g, plain, "", enterWithin)
	if !ok1 || !ok2 {
		t.Fatal("over the floor, a scenario waited on the gate's own pressure")
	}
	others.Store(OthersPressure)
	if _, ok := entered(t, g, plain, "", 2*pressurePoll); ok {
		t.Fatal("over the floor, a scenario entered while others contended the CPU")
	}
	g.others = func() (float64, bool) { return 0, false }
	if _, ok := entered(t, g, plain, "", 2*pressurePoll); ok {
		t.Fatal("over the floor, a scenario entered on a contended CPU, the others' use unknown")
	}
	l2()
	g.others = func() (float64, bool) { return 0, true }
	// The load scenario starts on a calm CPU, whoever loads it, and while
	// it waits for one no other enters over the floor.
	waiting := make(chan bool, 1)
	go func() {
		_, ok := entered(t, g, alone, "", 8*pressurePoll)
		waiting <- ok
	}()
	for deadline := time.Now().Add(enterWithin); g.loading.Load() == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the load scenario never began its wait for a calm CPU")
		}
	}
	if _, ok := entered(t, g, plain, "", 2*pressurePoll); ok {
		t.Fatal("a scenario entered over the floor while a load scenario waited for a calm CPU")
	}
	if <-waiting {
		t.Fatal("a load scenario entered on a contended CPU")
	}
	g.pressure = func() (float64, bool) { return 0, true }
	la, ok := entered(t, g, alone, "", enterWithin)
	if !ok {
		t.Fatal("a load scenario did not enter on a calm CPU")
	}
	g.pressure = func() (float64, bool) { return 100, true }
	if _, ok := entered(t, g, plain, "", 2*pressurePoll); ok {
		t.Fatal("a scenario entered beside a load scenario on a contended CPU")
	}
	la()
	l3, ok := entered(t, g, plain, "", enterWithin)
	if !ok {
		t.Fatal("once the load scenario left, a scenario waited on the gate's own pressure")
	}
	l3()
	l1()
}

func TestParseCPUTicks(t *testing.T) {
	t.Parallel()
	busy, all, ok := parseStat([]byte("cpu  142293 10 67200 87629 668 5 2312 105 7 0\ncpu0 1 2 3 4 5 6 7 8 9 10\n"))
	if !ok || busy != 142293+10+67200+5+2312+105 || all != busy+87629+668 {
		t.Errorf("parseStat: %d %d %v", busy, all, ok)
	}
	for _, in := range []string{"", "cpu0 1 2 3 4 5 6 7 8", "cpu 1 2 3", "cpu 1 2 3 4 5 6 7 x", "cpu 1 2 3 4 5 6 7 -8"} {
		if _, _, ok := parseStat([]byte(in)); ok {
			t.Errorf("parseStat(%q) accepted", in)
		}
	}
	ppid, self, ok := parseProcStat([]byte("29295 (a (b) c) R 29292 29292 2526 0 -1 4194304 100 0 0 0 11 22 33 44 20 0 1 0 152282\n"))
	if !ok || ppid != 29292 || self != 11+22+33+44 {
		t.Errorf("parseProcStat: %d %d %v", ppid, self, ok)
	}
	for _, in := range []string{"", "1 (x) R 1 2 3", "1 (x) R 1 2 3 4 5 6 7 8 9 10 x 1 1 1 1", "1 (x) R y 2 3 4 5 6 7 8 9 10 1 1 1 1 1"} {
		if _, _, ok := parseProcStat([]byte(in)); ok {
			t.Errorf("parseProcStat(%q) accepted", in)
		}
	}
	// The tree: this process and a child that burns CPU.
	cmd := exec.Command("sh", "-c", "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")
	before, ok := treeTicks(os.Getpid(), beyondTree{})
	if !ok {
		t.Skip("no /proc here")
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Live (or a zombie), then waited for: counted either way.
	deadline := time.Now().Add(10 * time.Second)
	for during := before; during < before+5; time.Sleep(10 * time.Millisecond) {
		if during, ok = treeTicks(os.Getpid(), beyondTree{}); !ok {
			t.Fatal("treeTicks of this process failed")
		}
		if time.Now().After(deadline) {
			t.Fatalf("a live child's CPU time is not counted: %d ticks before, %d during", before, during)
		}
	}
	_ = cmd.Wait()
	if after, _ := treeTicks(os.Getpid(), beyondTree{}); after < before+5 {
		t.Errorf("a waited-for child's CPU time is not counted: %d ticks before, %d after", before, after)
	}
}

// On Linux, the others' share reads, from 0 to 100.
func TestOthersCPUReads(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skipf("no /proc/stat here (%v): the gate counts all pressure as others'", err)
	}
	if p, ok := othersCPU(); !ok || p < 0 || p > 100 {
		t.Fatalf("othersCPU %v %v", p, ok)
	}
}

func TestParsePressure(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][2]float64{
		"some avg10=45.98 avg60=56.08 avg300=62.04 total=1687839867\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n": {45.98, 1687839867},
		"some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n":                                                             {0, 0},
		"full avg10=3.00 total=9\nsome avg10=7.5 avg60=1 total=12\n":                                                   {7.5, 12},
	} {
		if avg, total, ok := parsePressure([]byte(in)); !ok || avg != want[0] || float64(total) != want[1] {
			t.Errorf("%q: %v %v %v, want %v", in, avg, total, ok, want)
		}
	}
	for _, in := range []string{"", "some avg60=1 total=1", "some avg10=1", "some avg10=x total=1", "some avg10=101 total=1", "some avg10=-1 total=1", "some avg10=1 total=-5"} {
		if avg, total, ok := parsePressure([]byte(in)); ok {
			t.Errorf("%q: %v %v accepted", in, avg, total)
		}
	}
}

// On Linux, the pressure reads, as a share from 0 to 100.
func TestCPUPressureReads(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat(pressureFile); err != nil {
		t.Skipf("no %s here (%v): the gate does not throttle", pressureFile, err)
	}
	if p, ok := cpuPressure(); !ok || p < 0 || p > 100 {
		t.Fatalf("cpuPressure %v %v", p, ok)
	}
}

// cgroupContainer finds Docker's container id in cgroup v1 and v2 files,
// the innermost when nested, and nothing in a process outside containers.
func TestCgroupContainer(t *testing.T) {
	t.Parallel()
	id := strings.Repeat("0123456789abcdef", 4)
	inner := strings.Repeat("fedcba9876543210", 4)
	for _, tc := range []struct{ in, want string }{
		{"12:cpu,cpuacct:/docker/" + id + "\n0::/docker/" + id + "\n", id},
		{"0::/system.slice/docker-" + id + ".scope\n", id},
		{"2:cpuacct:/docker/" + id + "/docker/" + inner + "\n", inner},
		{"9:name=systemd:/\n0::/\n", ""},
		{"0::/user.slice/user-1000.slice/session-2.scope\n", ""},
		{"0::/docker/" + strings.ToUpper(id) + "\n", ""},
		{"0::/docker/" + id[:63] + "\n", ""},
		{"garbage without colons /docker/" + id, ""},
		{"", ""},
	} {
		if got := cgroupContainer([]byte(tc.in)); got != tc.want {
			t.Errorf("cgroupContainer(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
