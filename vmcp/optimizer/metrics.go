package optimizer

import (
	"encoding/json"
	"math"

	"github.com/mark3labs/mcp-go/mcp"
)

// TokenMetrics reports what find_tool saved compared with listing every tool
// of the session. Token counts are estimates: ceil(len(JSON)/4) over the
// compact JSON encoding of the tool list ([tool,tool,...] as encoding/json
// writes it), the usual four-bytes-per-token rule of thumb for English and
// JSON with BPE tokenizers.
type TokenMetrics struct {
	// BaselineTokens is the estimated size of all the session's tool
	// definitions, as tools/list would have returned them.
	BaselineTokens int `json:"baseline_tokens"`
	// ReturnedTokens is the estimated size of the tool definitions returned.
	ReturnedTokens int `json:"returned_tokens"`
	// SavingsPercent is 100*(baseline-returned)/baseline, rounded to two
	// decimals; 0 when the baseline is 0.
	SavingsPercent float64 `json:"savings_percent"`
}

// NewTokenMetrics computes the savings for the given token counts.
func NewTokenMetrics(baseline, returned int) TokenMetrics {
	m := TokenMetrics{BaselineTokens: baseline, ReturnedTokens: returned}
	if baseline > 0 {
		m.SavingsPercent = math.Round(10000*float64(baseline-returned)/float64(baseline)) / 100
	}
	return m
}

// EstimateTokens returns ceil(len(json.Marshal(tools))/4), the estimated
// number of tokens of a tool list. Tools that cannot be encoded count as
// nothing.
func EstimateTokens(tools []mcp.Tool) int {
	if len(tools) == 0 {
		// "[]" or "null": both are 1 token; a list of nothing costs nothing.
		return 0
	}
	raw, err := json.Marshal(tools)
	if err != nil {
		return 0
	}
	return bytesToTokens(len(raw))
}

func bytesToTokens(n int) int { return (n + 3) / 4 }

// EstimateListTokens is EstimateTokens of a list of n tools whose own JSON
// encodings add up to size bytes, for callers that already encoded them:
// the list adds '[', ']' and n-1 commas.
func EstimateListTokens(size, n int) int {
	if n == 0 {
		return 0
	}
	return bytesToTokens(size + n + 1)
}

// TokenMetrics returns the metrics of a search: the baseline is the estimate
// for every tool of allowed that is in the index (encoded lengths are cached
// at indexing time, so this does not re-encode the session's tools) and the
// returned count is the estimate for the matches' tools.
func (ix *Index) TokenMetrics(allowed ToolSet, matches []Match) TokenMetrics {
	s := ix.snap.Load()
	n, size := 0, 0
	for k := range allowed {
		if d := s.lookup(k); d != nil {
			n++
			size += d.jsonLen
		}
	}
	baseline := EstimateListTokens(size, n)
	tools := make([]mcp.Tool, len(matches))
	for i, m := range matches {
		tools[i] = m.Tool
	}
	return NewTokenMetrics(baseline, EstimateTokens(tools))
}
