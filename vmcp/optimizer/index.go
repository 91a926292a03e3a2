// Package optimizer is the search part of the vMCP optimizer: a shared,
// in-memory BM25 index of tool documents that find_tool queries on behalf of
// many sessions, each restricted to its own tools.
//
// One document is kept per (backend, tool) pair. It is made of the tool's
// name, title and description and of its input-schema parameter names and
// descriptions, tokenized by splitting snake_case, camelCase and kebab-case,
// lowercasing, dropping stopwords and applying a light stemmer.
//
// The index is a set of immutable per-backend segments published through an
// atomic pointer. Searches load the current snapshot and never take a lock;
// writers tokenize and build a backend's new segment off-lock and only hold a
// mutex to swap the map of segments (a copy of O(number of backends)
// pointers). Indexing one backend therefore never makes a search, or a
// session using other backends, wait.
package optimizer

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// DefaultMaxResults is the number of matches Search returns when limit <= 0.
const DefaultMaxResults = 8

// BM25 parameters and field weights. A term occurrence in the tool name
// counts NameWeight times, in a parameter name or description ParamWeight
// times, and in the description once (BM25F-style weighted term frequency).
// Keyword terms of a Query weigh KeywordWeight against 1 for description
// terms.
const (
	k1            = 1.2
	b             = 0.75
	nameWeight    = 3.0
	paramWeight   = 0.75
	keywordWeight = 2.0
)

// ToolKey identifies one tool document: the backend it comes from and the
// tool's name as indexed (the name sessions see and call).
type ToolKey struct {
	Backend string
	Tool    string
}

// String returns "backend/tool".
func (k ToolKey) String() string { return k.Backend + "/" + k.Tool }

// ToolSet is a set of tool keys: the tools one session may see.
type ToolSet map[ToolKey]struct{}

// Add inserts the keys of tools from backend into s.
func (s ToolSet) Add(backend string, tools ...mcp.Tool) {
	for _, t := range tools {
		s[ToolKey{Backend: backend, Tool: t.Name}] = struct{}{}
	}
}

// Query is a find_tool request: a natural-language description of the tool
// wanted and optional keywords, which weigh more than description words.
type Query struct {
	Description string
	Keywords    []string
}

// Match is one search result: the full tool definition and its BM25 score.
type Match struct {
	Key   ToolKey
	Tool  mcp.Tool
	Score float64
}

// Index is a shared, concurrency-safe BM25 index of tool documents. The zero
// value is not usable; call NewIndex.
type Index struct {
	mu   sync.Mutex // serializes snapshot swaps; held only to copy the segment map
	snap atomic.Pointer[snapshot]
}

// NewIndex returns an empty index.
func NewIndex() *Index {
	ix := &Index{}
	ix.snap.Store(&snapshot{segs: map[string]*segment{}})
	return ix
}

// doc is one indexed tool.
type doc struct {
	key     ToolKey
	tool    mcp.Tool
	tf      map[string]float32 // weighted term frequencies
	length  float64            // weighted document length
	jsonLen int                // len(json.Marshal(tool))
}

type posting struct {
	doc int32
	tf  float32
}

// segment is the immutable index of one backend's tools.
type segment struct {
	backend  string
	docs     []*doc // sorted by tool name
	byName   map[string]int32
	postings map[string][]posting
	totalLen float64
}

// snapshot is an immutable view of the whole index.
type snapshot struct {
	segs     map[string]*segment
	order    []*segment // sorted by backend, for deterministic iteration
	base     []int32    // base[i]: position of order[i]'s first document
	n        int        // number of documents
	totalLen float64
}

// doc returns the document at position i (see snapshot.base).
func (s *snapshot) doc(i int32) *doc {
	si := sort.Search(len(s.base), func(j int) bool { return s.base[j] > i }) - 1
	return s.order[si].docs[i-s.base[si]]
}

// Per-document state during a search.
const (
	stateUnknown uint8 = iota
	stateAllowed
	stateRejected
)

// scratch holds the per-search score arrays; they are pooled so that a
// search over 10,000 documents does not allocate them each time.
type scratch struct {
	scores  []float64
	state   []uint8
	touched []int32
}

var scratchPool = sync.Pool{New: func() any { return &scratch{} }}

func getScratch(n int) *scratch {
	sc := scratchPool.Get().(*scratch)
	if len(sc.scores) < n {
		sc.scores = make([]float64, n)
		sc.state = make([]uint8, n)
	}
	return sc
}

// putScratch clears the entries the search touched and pools sc again.
func putScratch(sc *scratch) {
	for _, i := range sc.touched {
		sc.scores[i] = 0
		sc.state[i] = stateUnknown
	}
	sc.touched = sc.touched[:0]
	scratchPool.Put(sc)
}

// Len returns the number of tool documents in the index.
func (ix *Index) Len() int { return ix.snap.Load().n }

// Backends returns the backends that have tools in the index, sorted.
func (ix *Index) Backends() []string { return slices.Sorted(maps.Keys(ix.snap.Load().segs)) }

// Add indexes tools of backend, replacing any tool of the same name already
// indexed for that backend and keeping its other tools. Tokenizing happens
// before any lock is taken; ctx bounds the work, and on error the index is
// unchanged.
func (ix *Index) Add(ctx context.Context, backend string, tools ...mcp.Tool) error {
	docs, err := buildDocs(ctx, backend, tools)
	if err != nil {
		return err
	}
	for {
		base := ix.snap.Load().segs[backend]
		merged := docs
		if base != nil {
			merged = mergeDocs(base.docs, docs)
		}
		seg, err := newSegment(ctx, backend, merged)
		if err != nil {
			return err
		}
		ix.mu.Lock()
		cur := ix.snap.Load()
		if cur.segs[backend] != base {
			// Another writer changed this backend meanwhile: merge again.
			ix.mu.Unlock()
			if err := ctx.Err(); err != nil {
				return err
			}
			continue
		}
		ix.snap.Store(cur.with(backend, seg))
		ix.mu.Unlock()
		return nil
	}
}

// ReplaceBackend makes tools the complete set of tools indexed for backend
// (an empty list removes the backend). The new segment is built off-lock;
// ctx bounds the work, and on error the index is unchanged.
func (ix *Index) ReplaceBackend(ctx context.Context, backend string, tools []mcp.Tool) error {
	docs, err := buildDocs(ctx, backend, tools)
	if err != nil {
		return err
	}
	var seg *segment
	if len(docs) > 0 {
		if seg, err = newSegment(ctx, backend, docs); err != nil {
			return err
		}
	}
	ix.mu.Lock()
	ix.snap.Store(ix.snap.Load().with(backend, seg))
	ix.mu.Unlock()
	return nil
}

// RemoveBackend removes every tool of backend from the index.
func (ix *Index) RemoveBackend(backend string) {
	ix.mu.Lock()
	ix.snap.Store(ix.snap.Load().with(backend, nil))
	ix.mu.Unlock()
}

// Search ranks the tools in allowed by BM25 relevance to q and returns at
// most limit of them (DefaultMaxResults if limit <= 0), best first; equal
// scores are ordered by tool name, then backend. Tools outside allowed are
// never returned; an empty allowed set, or a query without any searchable
// word, yields no matches and no error. Only tools with at least one query
// term are returned.
//
// Term statistics (document frequencies, average length) are those of the
// whole shared index, as with SQLite FTS5's bm25() under a WHERE filter.
func (ix *Index) Search(ctx context.Context, q Query, allowed ToolSet, limit int) ([]Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(allowed) == 0 {
		return nil, nil
	}
	if limit <= 0 {
		limit = DefaultMaxResults
	}
	qterms := queryTerms(q)
	s := ix.snap.Load()
	if len(qterms) == 0 || s.n == 0 {
		return nil, nil
	}
	avgdl := s.totalLen / float64(s.n)

	// Scores accumulate in dense scratch arrays indexed by the document's
	// position in the snapshot; the allowed set is consulted once per
	// document reached by a query term.
	sc := getScratch(s.n)
	defer putScratch(sc)
	work := 0
	for _, qt := range qterms {
		df := 0
		for _, seg := range s.order {
			df += len(seg.postings[qt.term])
		}
		if df == 0 {
			continue
		}
		idf := math.Log(1 + (float64(s.n)-float64(df)+0.5)/(float64(df)+0.5))
		w := qt.weight * idf
		for si, seg := range s.order {
			base := s.base[si]
			for _, p := range seg.postings[qt.term] {
				if work++; work&1023 == 0 {
					if err := ctx.Err(); err != nil {
						return nil, err
					}
				}
				i := base + p.doc
				d := seg.docs[p.doc]
				switch sc.state[i] {
				case stateRejected:
					continue
				case stateUnknown:
					if _, ok := allowed[d.key]; !ok {
						sc.state[i] = stateRejected
						sc.touched = append(sc.touched, i)
						continue
					}
					sc.state[i] = stateAllowed
					sc.touched = append(sc.touched, i)
				}
				tf := float64(p.tf)
				sc.scores[i] += w * tf * (k1 + 1) / (tf + k1*(1-b+b*d.length/avgdl))
			}
		}
	}

	// Keep the best limit candidates in a small sorted slice.
	top := make([]Match, 0, limit+1)
	better := func(sc float64, d *doc, m *Match) bool {
		return cmp.Or(cmp.Compare(m.Score, sc), strings.Compare(d.key.Tool, m.Key.Tool),
			strings.Compare(d.key.Backend, m.Key.Backend)) < 0
	}
	for _, di := range sc.touched {
		if sc.state[di] != stateAllowed {
			continue
		}
		score := sc.scores[di]
		d := s.doc(di)
		if len(top) == limit && !better(score, d, &top[limit-1]) {
			continue
		}
		i := sort.Search(len(top), func(i int) bool { return better(score, d, &top[i]) })
		top = slices.Insert(top, i, Match{Key: d.key, Tool: d.tool, Score: score})
		if len(top) > limit {
			top = top[:limit]
		}
	}
	return top, nil
}

type queryTerm struct {
	term   string
	weight float64
}

// queryTerms tokenizes q; a term's weight is the number of its occurrences in
// the description plus keywordWeight per occurrence in the keywords. Terms
// keep the order of first occurrence so that scoring is deterministic.
func queryTerms(q Query) []queryTerm {
	var out []queryTerm
	pos := map[string]int{}
	add := func(w float64) func(string) {
		return func(t string) {
			if i, ok := pos[t]; ok {
				out[i].weight += w
				return
			}
			pos[t] = len(out)
			out = append(out, queryTerm{term: t, weight: w})
		}
	}
	tokenize(q.Description, maxFieldTokens, add(1))
	for _, k := range q.Keywords {
		tokenize(k, maxFieldTokens, add(keywordWeight))
	}
	return out
}

// buildDocs tokenizes tools into documents, checking ctx between tools.
// Duplicate names keep the last definition.
func buildDocs(ctx context.Context, backend string, tools []mcp.Tool) ([]*doc, error) {
	if backend == "" {
		return nil, errors.New("optimizer: empty backend name")
	}
	byName := make(map[string]int, len(tools))
	docs := make([]*doc, 0, len(tools))
	for i := range tools {
		if i&63 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		d, err := newDoc(backend, tools[i])
		if err != nil {
			return nil, err
		}
		if j, dup := byName[d.key.Tool]; dup {
			docs[j] = d
			continue
		}
		byName[d.key.Tool] = len(docs)
		docs = append(docs, d)
	}
	return docs, nil
}

// newDoc builds the document of one tool.
func newDoc(backend string, t mcp.Tool) (*doc, error) {
	if t.Name == "" {
		return nil, fmt.Errorf("optimizer: backend %q: tool without a name", backend)
	}
	raw, err := json.Marshal(t)
	if err != nil {
		return nil, fmt.Errorf("optimizer: backend %q: tool %q: %w", backend, t.Name, err)
	}
	d := &doc{
		key:     ToolKey{Backend: backend, Tool: t.Name},
		tool:    t,
		tf:      map[string]float32{},
		jsonLen: len(raw),
	}
	add := func(w float64) func(string) {
		return func(term string) {
			d.tf[term] += float32(w)
			d.length += w
		}
	}
	tokenize(t.Name, maxFieldTokens, add(nameWeight))
	tokenize(cmp.Or(t.Title, t.Annotations.Title)+"\n"+t.Description, maxFieldTokens, add(1))
	tokenize(paramText(t), maxFieldTokens, add(paramWeight))
	return d, nil
}

// paramText returns the top-level input-schema parameters of t (from
// InputSchema or RawInputSchema) in name order, each as its name, then
// its title and description, on lines of their own.
func paramText(t mcp.Tool) string {
	descs := map[string]string{}
	if t.RawInputSchema != nil {
		var raw struct {
			Properties map[string]struct {
				Title       string `json:"title"`
				Description string `json:"description"`
			} `json:"properties"`
		}
		if json.Unmarshal(t.RawInputSchema, &raw) == nil {
			for name, p := range raw.Properties {
				descs[name] = p.Title + "\n" + p.Description
			}
		}
	} else {
		for name, p := range t.InputSchema.Properties {
			m, _ := p.(map[string]any)
			var desc string
			if s, ok := m["title"].(string); ok {
				desc = s + "\n"
			}
			if s, ok := m["description"].(string); ok {
				desc += s
			}
			descs[name] = desc
		}
	}
	var text strings.Builder
	for _, name := range slices.Sorted(maps.Keys(descs)) {
		text.WriteString(name + "\n" + descs[name] + "\n")
	}
	return text.String()
}

// mergeDocs returns old with the documents of upd added, replacing those of
// the same name.
func mergeDocs(old, upd []*doc) []*doc {
	replaced := make(map[string]bool, len(upd))
	for _, d := range upd {
		replaced[d.key.Tool] = true
	}
	out := slices.DeleteFunc(slices.Clone(old), func(d *doc) bool { return replaced[d.key.Tool] })
	return append(out, upd...)
}

// newSegment builds the inverted index of one backend's documents.
func newSegment(ctx context.Context, backend string, docs []*doc) (*segment, error) {
	sorted := slices.Clone(docs)
	slices.SortFunc(sorted, func(a, b *doc) int { return strings.Compare(a.key.Tool, b.key.Tool) })
	seg := &segment{
		backend:  backend,
		docs:     sorted,
		byName:   make(map[string]int32, len(sorted)),
		postings: map[string][]posting{},
	}
	for i, d := range sorted {
		if i&255 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		seg.byName[d.key.Tool] = int32(i)
		seg.totalLen += d.length
		for term, tf := range d.tf {
			seg.postings[term] = append(seg.postings[term], posting{doc: int32(i), tf: tf})
		}
	}
	return seg, nil
}

// with returns a copy of s in which backend's segment is seg (nil removes
// it). Only the map of segment pointers is copied.
func (s *snapshot) with(backend string, seg *segment) *snapshot {
	ns := &snapshot{segs: maps.Clone(s.segs)}
	delete(ns.segs, backend)
	if seg != nil {
		ns.segs[backend] = seg
	}
	ns.order = slices.SortedFunc(maps.Values(ns.segs), func(a, b *segment) int { return strings.Compare(a.backend, b.backend) })
	ns.base = make([]int32, len(ns.order))
	for i, sg := range ns.order { // in a fixed order, so the float sum is reproducible
		ns.base[i] = int32(ns.n)
		ns.n += len(sg.docs)
		ns.totalLen += sg.totalLen
	}
	return ns
}

// lookup returns the document of key, if indexed.
func (s *snapshot) lookup(k ToolKey) *doc {
	seg := s.segs[k.Backend]
	if seg == nil {
		return nil
	}
	i, ok := seg.byName[k.Tool]
	if !ok {
		return nil
	}
	return seg.docs[i]
}
