package hostslot

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
