package vmcp

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/onsi/gomega"

	"github.com/vmcp-chaos/vmcp-chaos/internal/testwait"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/config"
	"github.com/vmcp-chaos/vmcp-chaos/vmcp/optimizer"
)

func testAggregate(backends map[string][]string) *aggregate {
	views := map[string]backendView{}
	for b, names := range backends {
		var v backendView
		for _, n := range names {
			v.Tools = append(v.Tools, mcp.NewTool(n, mcp.WithDescription("the "+n+" tool of "+b)))
		}
		views[b] = v
	}
	return buildAggregate(config.Aggregation{ConflictResolution: config.ConflictPrefix, PrefixFormat: "{backend}_"}, views)
}

func search(t *testing.T, st *optimizerState, v *optView, q string) []string {
	t.Helper()
	ms, err := st.ix.Search(context.Background(), optimizer.Query{Description: q}, v.allowed, 100)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Tool.Name)
	}
	return out
}

// TestOptimizerSegmentsShared checks that views with the same tools of a
// backend share one segment, that a view searches only its own tools even
// when a backend's tools differ between views, and that dropping the last
// view removes the documents.
func TestOptimizerSegmentsShared(t *testing.T) {
	t.Parallel()
	st := newOptimizerState(8, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	a1 := testAggregate(map[string][]string{"a": {"echo", "sum"}, "b": {"echo"}})
	a2 := testAggregate(map[string][]string{"a": {"echo", "sum"}})
	a3 := testAggregate(map[string][]string{"a": {"echo", "sum", "extra"}, "b": {"echo"}}) // a changed its tools
	v1, v2, v3 := st.newView(a1), st.newView(a2), st.newView(a3)
	for _, v := range []*optView{v1, v2, v3} {
		v.ensure(ctx)
	}
	for _, v := range []*optView{v1, v2, v3} {
		if want := optimizer.EstimateTokens(v.agg.Tools); v.baseline != want || want == 0 {
			t.Errorf("baseline %d, want EstimateTokens of the view's tools %d", v.baseline, want)
		}
	}
	// Segments: a@x (v1, v2), b@y (v1, v3), a@z (v3).
	if n := len(st.segs); n != 3 {
		t.Fatalf("%d segments, want 3", n)
	}
	if n := st.ix.Len(); n != 2+1+3 {
		t.Fatalf("index holds %d documents, want 6", n)
	}
	if got := search(t, st, v2, "echo"); fmt.Sprint(got) != "[a_echo]" {
		t.Errorf("v2 echo = %v", got)
	}
	if got := search(t, st, v1, "extra"); len(got) != 0 {
		t.Errorf("v1 finds a tool of another view: %v", got)
	}
	if got := search(t, st, v3, "extra"); fmt.Sprint(got) != "[a_extra]" {
		t.Errorf("v3 extra = %v", got)
	}
	v1.release()
	if n := st.ix.Len(); n != 6 {
		t.Fatalf("after dropping v1: %d documents, want 6 (all still used)", n)
	}
	v3.release()
	if n := st.ix.Len(); n != 2 {
		t.Fatalf("after dropping v3: %d documents, want 2", n)
	}
	v2.release()
	if n, s := st.ix.Len(), len(st.segs); n != 0 || s != 0 {
		t.Fatalf("after dropping every view: %d documents, %d segments", n, s)
	}
	// A dropped view never re-acquires.
	v1.ensure(ctx)
	if n := st.ix.Len(); n != 0 {
		t.Fatalf("a dropped view indexed %d documents", n)
	}
}

// TestOptimizerPoolViewReplaced checks that a new pool aggregate replaces
// the previous view and releases its segments.
func TestOptimizerPoolViewReplaced(t *testing.T) {
	t.Parallel()
	st := newOptimizerState(8, slog.New(slog.DiscardHandler))
	ctx := context.Background()
	p1 := testAggregate(map[string][]string{"a": {"echo"}})
	p2 := testAggregate(map[string][]string{"a": {"echo"}, "b": {"ping"}})
	st.poolView(p1).ensure(ctx)
	if v := st.poolView(p1); v.agg != p1 {
		t.Fatal("same aggregate, new view")
	}
	v := st.poolView(p2)
	v.ensure(ctx)
	if n := st.ix.Len(); n != 2 {
		t.Fatalf("%d documents, want 2", n)
	}
	if got := search(t, st, v, "ping"); fmt.Sprint(got) != "[b_ping]" {
		t.Errorf("pool ping = %v", got)
	}
	st.poolView(testAggregate(map[string][]string{"b": {"ping"}})).ensure(ctx)
	if n, s := st.ix.Len(), len(st.segs); n != 1 || s != 1 {
		t.Fatalf("after the pool lost a: %d documents, %d segments", n, s)
	}
}

// TestOptimizerConcurrentAcquire races views of the same and different
// tools, with cancelled builds among them (-race).
func TestOptimizerConcurrentAcquire(t *testing.T) {
	t.Parallel()
	st := newOptimizerState(8, slog.New(slog.DiscardHandler))
	var names []string
	for i := range 300 {
		names = append(names, fmt.Sprintf("tool_%d", i))
	}
	aggs := []*aggregate{
		testAggregate(map[string][]string{"a": names, "b": names[:10]}),
		testAggregate(map[string][]string{"a": names}),
		testAggregate(map[string][]string{"b": names[:10], "c": names[:5]}),
	}
	var wg sync.WaitGroup
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			agg := testAggregate(map[string][]string{"a": names, "b": names[:10], "c": names[:5]})
			if i%3 != 0 {
				agg = aggs[i%len(aggs)]
			}
			v := st.newView(agg)
			ctx, cancel := context.WithCancel(context.Background())
			if i%5 == 0 {
				cancel() // a build or a wait cut short
			}
			v.ensure(ctx)
			cancel()
			if i%5 != 0 {
				if got := search(t, st, v, "tool 7"); len(got) == 0 {
					t.Errorf("view %d finds nothing", i)
				}
			}
			v.release()
		}()
	}
	wg.Wait()
	if n, s := st.ix.Len(), len(st.segs); n != 0 || s != 0 {
		t.Fatalf("after every view was released: %d documents, %d segments", n, s)
	}
}

// OptimizerStats reports, for external tests, the optimizer's live session
// views, indexed segments and documents, and how many session cleanup
// callbacks were ever registered.
func (g *Gateway) OptimizerStats() (sessions, segments, docs int, cleanups int64) {
	st := g.opt
	st.mu.Lock()
	defer st.mu.Unlock()
	return len(st.sessions), len(st.segs), st.ix.Len(), st.cleanups.Load()
}

// TestOptimizerSessionViewReplaced checks that re-registering a session's
// view keeps one view and one cleanup per session, shares unchanged
// segments, and that closing the session releases everything.
func TestOptimizerSessionViewReplaced(t *testing.T) {
	t.Parallel()
	st := newOptimizerState(8, slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	s := &Session{ctx: ctx}
	both := testAggregate(map[string][]string{"a": {"echo", "sum"}, "b": {"ping"}})
	onlyA := testAggregate(map[string][]string{"a": {"echo", "sum"}})
	var prev *optView
	for i := range 50 {
		agg := both
		if i%2 == 1 {
			agg = onlyA
		}
		nv, old := st.setSessionView(s, agg, "")
		if old != prev {
			t.Fatalf("flap %d: replaced view is not the previous one", i)
		}
		nv.ensure(ctx)
		if old != nil {
			old.release()
		}
		prev = nv
		if got := st.sessionView(s); got != nv {
			t.Fatalf("flap %d: current view is not the new one", i)
		}
		st.mu.Lock()
		views, segs := len(st.sessions), len(st.segs)
		refs := 0
		for _, sg := range st.segs {
			refs += sg.refs
		}
		st.mu.Unlock()
		if views != 1 || segs != len(nv.segTools) || refs != len(nv.segTools) {
			t.Fatalf("flap %d: %d views, %d segments, %d references; want 1, %d, %d", i, views, segs, refs, len(nv.segTools), len(nv.segTools))
		}
	}
	if n := st.cleanups.Load(); n != 1 {
		t.Fatalf("%d cleanup callbacks registered for one session, want 1", n)
	}
	cancel()
	type left struct{ Views, Segments, Documents int }
	gomega.NewWithT(t).Eventually(func() left {
		st.mu.Lock()
		defer st.mu.Unlock()
		return left{len(st.sessions), len(st.segs), st.ix.Len()}
	}).WithTimeout(5*time.Second).WithPolling(5*time.Millisecond).
		Should(gomega.BeZero(), "views, segments and documents left after the session closed")
	// A view set after the session closed is dropped too.
	st.setSessionView(s, both, "")
	testwait.For(t, 5*time.Second, "a view set on a closed session to be dropped", func() bool { return st.sessionView(s) == nil })
}
