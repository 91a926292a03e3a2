package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

// tableWidth is the width the verdict table fits in.
const tableWidth = 120

// printTable prints one row per scenario, at most tableWidth columns:
// name, verdict (with per-check counts when the scenario has checks, e.g.
// FAILED 3/11), duration, and why: the failed checks or the reason of a
// failure or skip (first line), or what a partial pass (PASSED*) did not
// check. Figures are in -v and the HTML report.
func printTable(w io.Writer, results *history.Results) {
	nameW, verdictW := len("SCENARIO"), len("VERDICT")
	for _, s := range results.Scenarios {
		nameW = max(nameW, utf8.RuneCountInString(s.Name))
		verdictW = max(verdictW, len(reports.Badge(&s)))
	}
	nameW = min(nameW, 36)
	const timeW = 8
	whyW := max(tableWidth-nameW-verdictW-timeW-6, 20)
	row := func(name, verdict, took, why string) {
		line := fmt.Sprintf("%-*s  %-*s  %*s  %s", nameW, fit(name, nameW), verdictW, verdict, timeW, took, fit(why, whyW))
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	row("SCENARIO", "VERDICT", "TIME", "WHY")
	partial := false
	for _, s := range results.Scenarios {
		b := reports.Badge(&s)
		if strings.Contains(b, "*") {
			partial = true
		}
		row(s.Name, b, s.Duration.D().Round(time.Millisecond).String(), why(s))
	}
	if partial {
		fmt.Fprintln(w, "PASSED*: passed, but some checks did not apply (the target lacks what they need, or works otherwise)")
	}
}

// why says in one line why a scenario did not simply pass.
func why(s history.ScenarioResult) string {
	var failed, inconclusive, na []string
	for _, c := range s.Checks {
		switch c.Verdict {
		case history.CheckFailed:
			failed = append(failed, c.Name)
		case history.CheckInconclusive:
			inconclusive = append(inconclusive, c.Name+" ("+c.Reason+")")
		case history.CheckNotApplicable:
			na = append(na, c.Name)
		}
	}
	var text string
	switch {
	case s.Verdict == history.VerdictInterrupted:
		text = s.Reason // its checks after the signal say nothing of the gateway
	case len(failed) > 0:
		text = "failed: " + strings.Join(failed, "; ")
	case len(inconclusive) > 0:
		text = "inconclusive: " + strings.Join(inconclusive, "; ")
	case s.Verdict != history.VerdictPassed:
		text = s.Reason
	case len(s.SkippedChecks) > 0:
		text = "checks skipped: " + strings.Join(s.SkippedChecks, "; ")
	case len(na) > 0:
		text = "not applicable: " + strings.Join(na, "; ")
	}
	text, _, _ = strings.Cut(text, "\n")
	return reports.Redact(text)
}

// fit cuts s to n runes, marking the cut with "…".
func fit(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// verdictCounts counts the scenarios by verdict, and the partial passes.
func verdictCounts(results *history.Results) (map[history.Verdict]int, int) {
	counts := map[history.Verdict]int{}
	partial := 0
	for _, s := range results.Scenarios {
		counts[s.Verdict]++
		if s.Partial() || strings.Contains(reports.Badge(&s), "*") {
			partial++
		}
	}
	return counts, partial
}

// keyFigures summarizes a scenario's figures: the largest time to error,
// failed calls after restarts, load counts and latency, or else the first
// few figures.
func keyFigures(figs map[string]float64) string {
	if len(figs) == 0 {
		return "-"
	}
	var parts []string
	isStall := func(k string) bool { return strings.Contains(k, "stall") || strings.Contains(k, "timeout") }
	maxOf := func(prefix string, keep func(string) bool) (string, float64, bool) {
		var key string
		var best float64
		found := false
		for k, v := range figs {
			if strings.HasPrefix(k, prefix) && keep(k) && (!found || v > best) {
				key, best, found = k, v, true
			}
		}
		return strings.TrimPrefix(key, prefix), best, found
	}
	if k, v, ok := maxOf("time_to_error_ms.", func(k string) bool { return !isStall(k) }); ok {
		parts = append(parts, fmt.Sprintf("time to error max %.1fms (%s)", v, k))
	}
	if k, v, ok := maxOf("time_to_error_ms.", isStall); ok {
		parts = append(parts, fmt.Sprintf("stall to error max %.0fms (%s)", v, k))
	}
	if _, v, ok := maxOf("failed_calls_after_", func(string) bool { return true }); ok {
		parts = append(parts, fmt.Sprintf("max failed calls after restart/recovery %.0f", v))
	}
	for _, k := range []string{"calls", "calls_failed", "latency_p99_ms", "latency_max_ms", "cancel_return_ms", "backend_cancelled_ms",
		"time_to_open_ms", "open_fail_fast_max_ms", "time_to_close_ms", "probe_interval_ms.min", "probe_interval_ms.max", "find_tool_ms"} {
		if v, ok := figs[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %s", k, trimFloat(v)))
		}
	}
	if len(parts) == 0 {
		keys := slices.Sorted(maps.Keys(figs))
		for _, k := range keys[:min(3, len(keys))] {
			parts = append(parts, fmt.Sprintf("%s %s", k, trimFloat(figs[k])))
		}
	}
	return strings.Join(parts, "; ")
}

func trimFloat(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.1f", v)
}
