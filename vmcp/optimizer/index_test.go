package optimizer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// rankOf returns the 1-based rank of name in the full result list of q, or 0.
func rankOf(t *testing.T, ix *Index, allowed ToolSet, qr Query, name string) (int, []Match) {
	t.Helper()
	ms, err := ix.Search(context.Background(), qr, allowed, len(allowed))
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range ms {
		if m.Key.Tool == name {
			return i + 1, ms
		}
	}
	return 0, ms
}

func TestRankingObviousMatchFirst(t *testing.T) {
	c := realisticCatalogue(t)
	if c.size() < 200 || len(c) < 15 {
		t.Fatalf("catalogue has %d tools in %d backends, want >= 200 in >= 15", c.size(), len(c))
	}
	ix := c.index(t)
	allowed := c.keys()
	hits, mrr := 0, 0.0
	for _, rc := range rankingCases {
		rank, ms := rankOf(t, ix, allowed, rc.query, rc.expected)
		if rank > 0 {
			mrr += 1 / float64(rank)
		}
		if rank == 1 {
			hits++
			continue
		}
		var top []string
		for i := 0; i < len(ms) && i < 3; i++ {
			top = append(top, fmt.Sprintf("%s(%.2f)", ms[i].Key.Tool, ms[i].Score))
		}
		t.Errorf("%q %v: %s ranks %d; top: %v", rc.query.Description, rc.query.Keywords, rc.expected, rank, top)
	}
	t.Logf("%d tools: hits@1 %d/%d, MRR %.3f", c.size(), hits, len(rankingCases), mrr/float64(len(rankingCases)))
}

func TestKeywordsHelp(t *testing.T) {
	c := realisticCatalogue(t)
	ix := c.index(t)
	// "create an issue" alone is ambiguous between GitHub, Jira and Linear;
	// the keyword decides.
	for kw, want := range map[string]string{"github": "github_create_issue", "jira": "jira_create_issue", "linear": "linear_create_issue"} {
		ms, err := ix.Search(context.Background(), q("create an issue", kw), c.keys(), 1)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) != 1 || ms[0].Key.Tool != want {
			t.Errorf("keyword %q: got %v, want %s first", kw, ms, want)
		}
	}
}

func TestSearchRestrictedToAllowedSet(t *testing.T) {
	c := realisticCatalogue(t)
	ix := c.index(t)
	all := c.all()
	r := rand.New(rand.NewPCG(7, 7))
	queries := make([]Query, 0, len(rankingCases)+1)
	for _, rc := range rankingCases {
		queries = append(queries, rc.query)
	}
	queries = append(queries, q("list get create update delete search", "github", "slack", "k8s"))
	for iter := 0; iter < 300; iter++ {
		// A random subset of tools, sometimes whole backends, sometimes
		// keys that are not in the index at all.
		allowed := ToolSet{}
		p := r.Float64()
		for _, b := range c.backends() {
			for _, tool := range c[b] {
				if r.Float64() < p*p {
					allowed.Add(b, tool)
				}
			}
		}
		if iter%5 == 0 {
			allowed[ToolKey{Backend: "ghost", Tool: "github_create_issue"}] = struct{}{}
			// The same tool name under another backend is another tool.
			allowed[ToolKey{Backend: "slack", Tool: all[r.IntN(len(all))].Name}] = struct{}{}
		}
		qr := queries[r.IntN(len(queries))]
		limit := 1 + r.IntN(len(allowed)+1)
		ms, err := ix.Search(context.Background(), qr, allowed, limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(ms) > limit {
			t.Fatalf("got %d matches, limit %d", len(ms), limit)
		}
		for i, m := range ms {
			if _, ok := allowed[m.Key]; !ok {
				t.Fatalf("iteration %d: %s returned but not allowed", iter, m.Key)
			}
			if i > 0 && (ms[i-1].Score < m.Score || ms[i-1].Score == m.Score && ms[i-1].Key.Tool > m.Key.Tool) {
				t.Fatalf("iteration %d: not sorted at %d: %v", iter, i, ms)
			}
		}
	}
}

func TestEmptyAllowedSetAndEmptyQuery(t *testing.T) {
	c := realisticCatalogue(t)
	ix := c.index(t)
	for _, allowed := range []ToolSet{nil, {}} {
		ms, err := ix.Search(context.Background(), q("create an issue", "github"), allowed, 8)
		if err != nil || len(ms) != 0 {
			t.Fatalf("empty allowed set: %v, %v", ms, err)
		}
	}
	ms, err := ix.Search(context.Background(), q("the of and", "a"), c.keys(), 8)
	if err != nil || len(ms) != 0 {
		t.Fatalf("stopword-only query: %v, %v", ms, err)
	}
	ms, err = NewIndex().Search(context.Background(), q("create an issue"), c.keys(), 8)
	if err != nil || len(ms) != 0 {
		t.Fatalf("empty index: %v, %v", ms, err)
	}
}

func TestDeterministicTieBreakByName(t *testing.T) {
	ix := NewIndex()
	mk := func(name string) mcp.Tool { return mcp.NewTool(name, mcp.WithDescription("Frobnicate the widget.")) }
	ctx := context.Background()
	// Same description, names without query terms: equal scores.
	must(t, ix.ReplaceBackend(ctx, "b2", []mcp.Tool{mk("zeta"), mk("alpha")}))
	must(t, ix.ReplaceBackend(ctx, "b1", []mcp.Tool{mk("mid"), mk("alpha")}))
	allowed := NewToolSet(ToolKey{"b1", "alpha"}, ToolKey{"b1", "mid"}, ToolKey{"b2", "alpha"}, ToolKey{"b2", "zeta"})
	for i := 0; i < 20; i++ {
		ms, err := ix.Search(ctx, q("frobnicate widget"), allowed, 10)
		must(t, err)
		var got []string
		for _, m := range ms {
			got = append(got, m.Key.String())
		}
		want := []string{"b1/alpha", "b2/alpha", "b1/mid", "b2/zeta"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

// TestDefaultLimit: a limit <= 0 returns DefaultMaxResults (8) of more
// matching tools, the best ones.
func TestDefaultLimit(t *testing.T) {
	ix := NewIndex()
	ctx := context.Background()
	var tools []mcp.Tool
	allowed := ToolSet{}
	for i := range 20 {
		// tool_00 mentions "frobnicate" 20 times, tool_19 once: scores fall
		// with i.
		desc := strings.Repeat("frobnicate ", 20-i) + "the widget"
		tools = append(tools, mcp.NewTool(fmt.Sprintf("tool_%02d", i), mcp.WithDescription(desc)))
	}
	must(t, ix.ReplaceBackend(ctx, "b", tools))
	allowed.Add("b", tools...)
	if DefaultMaxResults != 8 {
		t.Fatalf("DefaultMaxResults = %d, want 8", DefaultMaxResults)
	}
	for _, limit := range []int{0, -1} {
		ms, err := ix.Search(ctx, q("frobnicate"), allowed, limit)
		must(t, err)
		var got []string
		for _, m := range ms {
			got = append(got, m.Key.Tool)
		}
		want := []string{"tool_00", "tool_01", "tool_02", "tool_03", "tool_04", "tool_05", "tool_06", "tool_07"}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("limit %d: %v, want %v", limit, got, want)
		}
	}
	if ms, _ := ix.Search(ctx, q("frobnicate"), allowed, 12); len(ms) != 12 {
		t.Fatalf("limit 12: %d matches", len(ms))
	}
}

func TestAddReplaceRemove(t *testing.T) {
	ctx := context.Background()
	ix := NewIndex()
	tool := func(name, desc string) mcp.Tool { return mcp.NewTool(name, mcp.WithDescription(desc)) }
	must(t, ix.Add(ctx, "crm", tool("create_lead", "Create a sales lead."), tool("get_account", "Get an account.")))
	must(t, ix.Add(ctx, "crm", tool("create_lead", "Register a prospect."))) // replaces by name
	if ix.Len() != 2 {
		t.Fatalf("Len %d, want 2", ix.Len())
	}
	allowed := NewToolSet(ToolKey{"crm", "create_lead"}, ToolKey{"crm", "get_account"}, ToolKey{"crm", "new_tool"})
	ms, _ := ix.Search(ctx, q("sales lead"), allowed, 8)
	if len(ms) != 1 || ms[0].Key.Tool != "create_lead" {
		// "lead" still matches through the name.
		t.Fatalf("after Add: %v", ms)
	}
	if ms, _ := ix.Search(ctx, q("sales"), allowed, 8); len(ms) != 0 {
		t.Fatalf("old description still indexed: %v", ms)
	}
	must(t, ix.ReplaceBackend(ctx, "crm", []mcp.Tool{tool("new_tool", "Something else entirely.")}))
	if ms, _ := ix.Search(ctx, q("lead account"), allowed, 8); len(ms) != 0 {
		t.Fatalf("replaced tools still found: %v", ms)
	}
	if ms, _ := ix.Search(ctx, q("something else"), allowed, 8); len(ms) != 1 {
		t.Fatalf("new tool not found: %v", ms)
	}
	ix.RemoveBackend("crm")
	if ix.Len() != 0 || len(ix.Backends()) != 0 {
		t.Fatalf("after RemoveBackend: Len %d, backends %v", ix.Len(), ix.Backends())
	}
	if err := ix.Add(ctx, "", tool("x", "y")); err == nil {
		t.Fatal("empty backend accepted")
	}
	if err := ix.Add(ctx, "b", mcp.Tool{}); err == nil {
		t.Fatal("nameless tool accepted")
	}
	must(t, ix.ReplaceBackend(ctx, "b", nil))
	if ix.Len() != 0 {
		t.Fatal("ReplaceBackend(nil) left tools")
	}
}

func TestRawInputSchemaAndCamelCase(t *testing.T) {
	ctx := context.Background()
	ix := NewIndex()
	tl := mcp.NewToolWithRawSchema("listPullRequests", "Lists PRs.",
		json.RawMessage(`{"type":"object","properties":{"repoOwner":{"type":"string","description":"GitHub organisation"}}}`))
	must(t, ix.Add(ctx, "gh", tl))
	allowed := NewToolSet(ToolKey{"gh", "listPullRequests"})
	for _, text := range []string{"pull request", "organisation", "repo owner", "repository", "listing pull-requests"} {
		if ms, _ := ix.Search(ctx, q(text), allowed, 1); len(ms) != 1 {
			t.Errorf("%q does not find listPullRequests", text)
		}
	}
}

func TestTokenize(t *testing.T) {
	for in, want := range map[string][]string{
		"github_create_issue":      {"github", "creat", "issu"},
		"listPullRequests":         {"list", "pull", "request"},
		"HTTPServer get-k8s-pods":  {"http", "server", "get", "kubernet", "pod"},
		"Created the issues of S3": {"creat", "issu", "s3"},
		"running stopped policies": {"run", "stop", "policy"},
	} {
		if got := terms(in); !reflect.DeepEqual(got, want) {
			t.Errorf("terms(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestConcurrentAddAndSearch(t *testing.T) {
	c := realisticCatalogue(t)
	ix := NewIndex()
	ctx := context.Background()
	allowed := c.keys()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				rc := rankingCases[(w+i)%len(rankingCases)]
				ms, err := ix.Search(ctx, rc.query, allowed, 8)
				if err != nil {
					t.Error(err)
					return
				}
				for _, m := range ms {
					if _, ok := allowed[m.Key]; !ok {
						t.Errorf("%s not allowed", m.Key)
					}
				}
			}
		}(w)
	}
	var writers sync.WaitGroup
	for _, b := range c.backends() {
		writers.Add(1)
		go func(b string) {
			defer writers.Done()
			for i := 0; i < 3; i++ {
				// Tool by tool (merging), then whole backend, then removal.
				for _, tl := range c[b] {
					if err := ix.Add(ctx, b, tl); err != nil {
						t.Error(err)
					}
				}
				if err := ix.ReplaceBackend(ctx, b, c[b]); err != nil {
					t.Error(err)
				}
				if i < 2 {
					ix.RemoveBackend(b)
				}
			}
		}(b)
	}
	writers.Wait()
	close(stop)
	wg.Wait()
	if ix.Len() != c.size() {
		t.Fatalf("Len %d, want %d", ix.Len(), c.size())
	}
	// The final index ranks like one built sequentially.
	seq := c.index(t)
	for _, rc := range rankingCases {
		a, _ := ix.Search(ctx, rc.query, allowed, 8)
		b, _ := seq.Search(ctx, rc.query, allowed, 8)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: concurrent index differs from sequential", rc.query.Description)
		}
	}
}

func TestContextCancellation(t *testing.T) {
	c := syntheticCatalogue(2000)
	ix := c.index(t)
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(cancelled, q("create issue"), c.keys(), 8); !errors.Is(err, context.Canceled) {
		t.Fatalf("Search: %v, want context.Canceled", err)
	}
	before := ix.Len()
	if err := ix.ReplaceBackend(cancelled, "new", c.all()); !errors.Is(err, context.Canceled) {
		t.Fatalf("ReplaceBackend: %v", err)
	}
	if err := ix.Add(cancelled, "new", c.all()...); !errors.Is(err, context.Canceled) {
		t.Fatalf("Add: %v", err)
	}
	if ix.Len() != before {
		t.Fatal("cancelled build changed the index")
	}
	// A deadline that expires during a large build is honoured promptly.
	big := syntheticCatalogue(10000).all()
	ctx, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	start := time.Now()
	err := ix.ReplaceBackend(ctx, "big", big)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("ReplaceBackend with 1ms deadline: %v", err)
	}
	if d := time.Since(start); d > 500*time.Millisecond {
		t.Fatalf("build ran %v past a 1ms deadline", d)
	}
}

// blockingSchema is an input-schema property whose JSON encoding waits
// until release is closed: a tool holding it makes an index build stop in
// the middle (while it encodes that tool) for as long as the test wants.
type blockingSchema struct {
	entered, release chan struct{}
	once             sync.Once
}

func (b *blockingSchema) MarshalJSON() ([]byte, error) {
	b.once.Do(func() { close(b.entered) })
	<-b.release
	return []byte(`{"type":"string"}`), nil
}

// TestSearchNotBlockedByBuild holds a build of a 10,000-tool backend in
// the middle for as long as the test wants, and checks that meanwhile
// searches complete (with correct results), another backend is replaced
// and removed, and searches see those changes; then the held build
// finishes and its tools become searchable. If any of these waited for the
// held build, it would not complete before the test's deadline.
func TestSearchNotBlockedByBuild(t *testing.T) {
	c := realisticCatalogue(t)
	ix := c.index(t)
	allowed := c.keys()
	big := syntheticCatalogue(10000).all()
	hold := &blockingSchema{entered: make(chan struct{}), release: make(chan struct{})}
	stuck := mcp.NewTool("stuck_tool", mcp.WithDescription("A tool whose schema encodes slowly."))
	stuck.InputSchema.Properties = map[string]any{"x": hold}
	big = append(big[:5000:5000], append([]mcp.Tool{stuck}, big[5000:]...)...)

	buildErr := make(chan error, 1)
	go func() { buildErr <- ix.ReplaceBackend(context.Background(), "huge", big) }()
	released := false
	release := func() {
		if !released {
			released = true
			close(hold.release)
		}
	}
	defer func() { // the build never outlives the test
		release()
		<-buildErr
	}()
	select {
	case <-hold.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the build never reached the held tool")
	}

	// While the build is held: searches, a replace and a removal, each
	// bounded by a deadline; all run on a goroutine owned by this test.
	type outcome struct {
		searches int
		err      error
	}
	during := make(chan outcome, 1)
	go func() {
		n := 0
		for _, rc := range rankingCases {
			ms, err := ix.Search(context.Background(), rc.query, allowed, 8)
			if err != nil {
				during <- outcome{n, err}
				return
			}
			if len(ms) == 0 || ms[0].Key.Tool != rc.expected {
				during <- outcome{n, fmt.Errorf("search %q during the build: %v, want %s first", rc.query.Description, keysOf(ms), rc.expected)}
				return
			}
			n++
		}
		extra := mcp.NewTool("zebra_feed", mcp.WithDescription("Feed the zebras at the zoo."))
		if err := ix.ReplaceBackend(context.Background(), "zoo", []mcp.Tool{extra}); err != nil {
			during <- outcome{n, err}
			return
		}
		zoo := NewToolSet(ToolKey{"zoo", "zebra_feed"})
		if ms, err := ix.Search(context.Background(), q("feed the zebras"), zoo, 8); err != nil || len(ms) != 1 {
			during <- outcome{n, fmt.Errorf("zoo after replace during the build: %v %v", keysOf(ms), err)}
			return
		}
		ix.RemoveBackend("zoo")
		if ms, err := ix.Search(context.Background(), q("feed the zebras"), zoo, 8); err != nil || len(ms) != 0 {
			during <- outcome{n, fmt.Errorf("zoo after removal during the build: %v %v", keysOf(ms), err)}
			return
		}
		during <- outcome{n, nil}
	}()
	select {
	case o := <-during:
		if o.err != nil {
			t.Fatal(o.err)
		}
		t.Logf("%d searches, a replace and a removal completed while a 10,001-tool build was held", o.searches)
	case <-time.After(30 * time.Second):
		release() // let the stuck goroutine finish before failing
		<-during
		t.Fatal("searches or other backends' updates waited for a build in progress")
	}
	select {
	case err := <-buildErr:
		t.Fatalf("the held build ended (%v) before it was released", err)
	default:
	}
	if ix.Len() != c.size() {
		t.Fatalf("Len %d during the held build, want %d (the build's tools are not visible yet)", ix.Len(), c.size())
	}

	release()
	select {
	case err := <-buildErr:
		must(t, err)
		buildErr <- nil // for the deferred wait
	case <-time.After(60 * time.Second):
		t.Fatal("the released build did not finish")
	}
	names := map[string]bool{}
	for _, tl := range big {
		names[tl.Name] = true // the synthetic catalogue repeats some names
	}
	if ix.Len() != c.size()+len(names) {
		t.Fatalf("Len %d after the build, want %d", ix.Len(), c.size()+len(names))
	}
	ms, err := ix.Search(context.Background(), q("schema encodes slowly"), NewToolSet(ToolKey{"huge", "stuck_tool"}), 8)
	if err != nil || len(ms) != 1 {
		t.Fatalf("the built backend's tool: %v %v", keysOf(ms), err)
	}
}

func keysOf(ms []Match) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.Key.String()
	}
	return out
}

func TestTokenMetrics(t *testing.T) {
	c := realisticCatalogue(t)
	ix := c.index(t)
	allowed := c.keys()
	ms, err := ix.Search(context.Background(), q("create an issue", "github"), allowed, 8)
	must(t, err)
	tm := ix.TokenMetrics(allowed, ms)
	raw, _ := json.Marshal(c.all())
	if want := (len(raw) + 3) / 4; tm.BaselineTokens != want {
		t.Fatalf("baseline %d, want ceil(%d/4) = %d", tm.BaselineTokens, len(raw), want)
	}
	if want := EstimateTokens(matchTools(ms)); tm.ReturnedTokens != want || want == 0 {
		t.Fatalf("returned %d, want %d", tm.ReturnedTokens, want)
	}
	if tm.SavingsPercent <= 90 || tm.SavingsPercent >= 100 {
		t.Fatalf("savings %v%%", tm.SavingsPercent)
	}
	out, _ := json.Marshal(NewTokenMetrics(1000, 125))
	if string(out) != `{"baseline_tokens":1000,"returned_tokens":125,"savings_percent":87.5}` {
		t.Fatalf("JSON %s", out)
	}
	if m := NewTokenMetrics(0, 0); m.SavingsPercent != 0 {
		t.Fatal(m)
	}
	if m := ix.TokenMetrics(ToolSet{}, nil); m != (TokenMetrics{}) {
		t.Fatal(m)
	}
}

func matchTools(ms []Match) []mcp.Tool {
	out := make([]mcp.Tool, len(ms))
	for i, m := range ms {
		out[i] = m.Tool
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// NewToolSet returns a set holding keys.
func NewToolSet(keys ...ToolKey) ToolSet {
	s := make(ToolSet, len(keys))
	for _, k := range keys {
		s[k] = struct{}{}
	}
	return s
}

// terms returns the tokens of text as a slice (see tokenize).
func terms(text string) []string {
	var out []string
	tokenize(text, maxFieldTokens, func(t string) { out = append(out, t) })
	return out
}
