package redact

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkTextResults: redacting a 10 MB results document (the size of
// a full run's results) as Results.WriteJSON does.
func BenchmarkTextResults(b *testing.B) {
	data, err := os.ReadFile("../../reports/testdata/run-reference.json")
	if err != nil {
		b.Skip(err)
	}
	doc := strings.Repeat(string(data), (10<<20)/len(data))
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		_ = Text(doc)
	}
}
