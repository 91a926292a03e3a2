package runner

import (
	"context"
	"testing"
	"time"
)

// The waiters of a prioSem are served highest priority first, then in
// the order they came; a heavy head waits for its weight; a waiter whose
// context ends leaves the queue.
func TestPrioSemServesByPriority(t *testing.T) {
	s := newPrioSem(2)
	ctx := context.Background()
	if err := s.acquire(ctx, 2, 0); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 4)
	start := func(name string, w int64, prio time.Duration) {
		go func() {
			if err := s.acquire(ctx, w, prio); err == nil {
				order <- name
				time.Sleep(20 * time.Millisecond)
				s.release(w)
			}
		}()
	}
	start("short-1", 1, time.Second)
	time.Sleep(20 * time.Millisecond)
	start("short-2", 2, time.Second) // waits for short-1 to give its weight back
	time.Sleep(20 * time.Millisecond)
	start("long", 2, time.Minute)
	time.Sleep(20 * time.Millisecond)
	gone, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if err := s.acquire(gone, 1, time.Hour); err == nil {
		t.Fatal("acquire with a full semaphore returned before its context ended")
	}
	s.release(2)
	var got []string
	for range 3 {
		select {
		case n := <-order:
			got = append(got, n)
		case <-time.After(5 * time.Second):
			t.Fatalf("served %v, then nothing for 5 s", got)
		}
	}
	if want := []string{"long", "short-1", "short-2"}; !equal(got, want) {
		t.Errorf("served %v, want %v", got, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
