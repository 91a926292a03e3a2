package hostslot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// uniqueKind keeps the test's slots apart from real runs' and from other
// copies of this test.
func uniqueKind(t *testing.T) string {
	kind := fmt.Sprintf("test-%s-%d-%d", t.Name(), os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { RemoveKind(kind) })
	return kind
}

func TestAcquireBoundsAndReleases(t *testing.T) {
	kind := uniqueKind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r1, err := Acquire(ctx, kind, 2)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := Acquire(ctx, kind, 2)
	if err != nil {
		t.Fatal(err)
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if _, err := Acquire(short, kind, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third slot of 2: %v, want the deadline", err)
	}
	got := make(chan error, 1)
	go func() {
		r, err := Acquire(ctx, kind, 2)
		if err == nil {
			r()
		}
		got <- err
	}()
	r1()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a released slot was not taken within 5 s")
	}
	r2()
}

// A slot held by another process is held; once that process is killed
// (no release), the slot is free again.
func TestSlotOfAKilledProcessIsFree(t *testing.T) {
	if os.Getenv("HOSTSLOT_CHILD") != "" {
		if _, err := Acquire(context.Background(), os.Getenv("HOSTSLOT_CHILD"), 1); err != nil {
			fmt.Println("child:", err)
			os.Exit(1)
		}
		fmt.Println("held")
		time.Sleep(time.Minute)
		os.Exit(0)
	}
	kind := uniqueKind(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestSlotOfAKilledProcessIsFree$")
	cmd.Env = append(os.Environ(), "HOSTSLOT_CHILD="+kind)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	buf := make([]byte, 64)
	n, _ := out.Read(buf)
	if !strings.Contains(string(buf[:n]), "held") {
		t.Fatalf("child: %q", buf[:n])
	}
	short, cancelShort := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancelShort()
	if _, err := Acquire(short, kind, 1); err == nil {
		t.Fatal("took a slot another process holds")
	}
	cmd.Process.Kill()
	r, err := Acquire(ctx, kind, 1)
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	r()
}

// Holders names this process while it holds a slot, and no one once it
// gave it back.
func TestHolders(t *testing.T) {
	if _, err := os.Stat(locksFile); err != nil {
		t.Skipf("no %s here: %v", locksFile, err)
	}
	kind := fmt.Sprintf("test-holders-%d-%d", os.Getpid(), time.Now().UnixNano())
	t.Cleanup(func() { RemoveKind(kind) })
	if pids, err := Holders(kind); err != nil || len(pids) != 0 {
		t.Fatalf("Holders of a kind never taken: %v %v", pids, err)
	}
	release, err := Acquire(context.Background(), kind, 2)
	if err != nil {
		t.Fatal(err)
	}
	if pids, err := Holders(kind); err != nil || !slices.Equal(pids, []int{os.Getpid()}) {
		t.Errorf("Holders while this process (%d) holds a slot: %v %v", os.Getpid(), pids, err)
	}
	release()
	if pids, err := Holders(kind); err != nil || len(pids) != 0 {
		t.Errorf("Holders once the slot was given back: %v %v", pids, err)
	}
}

// lockHolders reads the holders of the inodes asked for, skips waiting
// requests and other lock kinds, and refuses lines it cannot read.
func TestLockHolders(t *testing.T) {
	locks := "1: FLOCK  ADVISORY  WRITE 1451 fe:00:762126 0 EOF\n" +
		"2: FLOCK  ADVISORY  WRITE 77 fe:00:99 0 EOF\n" +
		"2: -> FLOCK  ADVISORY  WRITE 78 fe:00:99 0 EOF\n" +
		"3: POSIX  ADVISORY  WRITE 79 fe:00:99 0 EOF\n" +
		"4: OFDLCK ADVISORY  READ  -1 00:05:99 0 EOF\n"
	pids, err := lockHolders([]byte(locks), map[uint64]bool{99: true})
	if err != nil || !slices.Equal(pids, []int{77}) {
		t.Errorf("lockHolders: %v %v, want [77]", pids, err)
	}
	for _, bad := range []string{"1: FLOCK ADVISORY\n", "1: FLOCK ADVISORY WRITE x fe:00:99 0 EOF\n", "1: FLOCK ADVISORY WRITE 5 fe:99 0 EOF\n"} {
		if _, err := lockHolders([]byte(bad), map[uint64]bool{99: true}); err == nil {
			t.Errorf("lockHolders(%q) accepted", bad)
		}
	}
}
