package optimizer

import (
	"context"
	"testing"
)

// benchQueries are typical find_tool requests against the synthetic catalogue.
var benchQueries = []Query{
	q("create a new issue in the project", "github"),
	q("list the pods of the cluster"),
	q("refund a customer payment", "stripe"),
	q("search log events from last hour", "datadog"),
	q("archive an old slack channel"),
	q("export the invoices of a customer as csv"),
	q("who is assigned to this incident"),
	q("delete a secret from the vault", "vault"),
}

// BenchmarkBuild10k measures indexing 10,000 tools from scratch, as 100
// backends of 100 tools.
func BenchmarkBuild10k(b *testing.B) {
	c := syntheticCatalogue(10000)
	backends := c.backends()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		ix := NewIndex()
		for _, be := range backends {
			if err := ix.ReplaceBackend(ctx, be, c[be]); err != nil {
				b.Fatal(err)
			}
		}
		if ix.Len() != 10000 {
			b.Fatal(ix.Len())
		}
	}
}

// BenchmarkSearch10k measures one find_tool search over a 10,000-tool index
// for a session allowed all 10,000 tools (the worst case) and for a session
// of 10 backends (1,000 tools).
func BenchmarkSearch10k(b *testing.B) {
	c := syntheticCatalogue(10000)
	ix := c.index(b)
	all := c.keys()
	session := ToolSet{}
	for _, be := range c.backends()[:10] {
		session.Add(be, c[be]...)
	}
	ctx := context.Background()
	for _, bc := range []struct {
		name    string
		allowed ToolSet
	}{{"allowed=10000", all}, {"allowed=1000", session}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				ms, err := ix.Search(ctx, benchQueries[i%len(benchQueries)], bc.allowed, DefaultMaxResults)
				if err != nil || len(ms) == 0 {
					b.Fatal(err, len(ms))
				}
				i++
			}
		})
	}
}

// BenchmarkTokenMetrics10k measures the token metrics of one search for a
// session of 10,000 tools.
func BenchmarkTokenMetrics10k(b *testing.B) {
	c := syntheticCatalogue(10000)
	ix := c.index(b)
	all := c.keys()
	ms, _ := ix.Search(context.Background(), benchQueries[0], all, DefaultMaxResults)
	b.ReportAllocs()
	for b.Loop() {
		ix.TokenMetrics(all, ms)
	}
}
