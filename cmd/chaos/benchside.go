package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

// benchLabels names each run's column: its target, numbered when two
// runs share one.
func benchLabels(runs []*history.Results) []string {
	n := map[string]int{}
	for _, r := range runs {
		n[r.Target]++
	}
	out := make([]string, len(runs))
	for i, r := range runs {
		out[i] = r.Target
		if n[r.Target] > 1 || r.Target == "" {
			out[i] = fmt.Sprintf("%s#%d", r.Target, i+1)
		}
	}
	return out
}

// printBenchSide prints several bench runs side by side: a column per
// gateway, a row per scenario (its verdict in each run) followed by its
// figures (sorted; "-" where a run lacks one), then the reasons of the
// scenarios that did not pass.
func printBenchSide(w io.Writer, runs []*history.Results) {
	labels := benchLabels(runs)
	nameW := len("SCENARIO / FIGURE")
	var names []string
	byRun := make([]map[string]*history.ScenarioResult, len(runs))
	for i, r := range runs {
		byRun[i] = map[string]*history.ScenarioResult{}
		for j := range r.Scenarios {
			s := &r.Scenarios[j]
			byRun[i][s.Name] = s
			if !slices.Contains(names, s.Name) {
				names = append(names, s.Name)
			}
			nameW = max(nameW, len(s.Name))
			for k := range s.Figures {
				nameW = max(nameW, len(k)+2)
			}
		}
	}
	colW := 12
	for _, l := range labels {
		colW = max(colW, len(l))
	}
	row := func(name string, cells []string) {
		line := fmt.Sprintf("%-*s", nameW, name)
		for _, c := range cells {
			line += fmt.Sprintf("  %*s", colW, c)
		}
		fmt.Fprintln(w, strings.TrimRight(line, " "))
	}
	fmt.Fprintln(w)
	row("SCENARIO / FIGURE", labels)
	for _, n := range names {
		cells := make([]string, len(runs))
		figs := map[string]bool{}
		for i := range runs {
			cells[i] = "not run"
			if s := byRun[i][n]; s != nil {
				cells[i] = strings.ToUpper(string(s.Verdict))
				for k := range s.Figures {
					figs[k] = true
				}
			}
		}
		row(n, cells)
		for _, k := range slices.Sorted(maps.Keys(figs)) {
			for i := range runs {
				cells[i] = "-"
				if s := byRun[i][n]; s != nil {
					if v, ok := s.Figures[k]; ok {
						cells[i] = fmt.Sprintf("%.4g", v)
					}
				}
			}
			row("  "+k, cells)
		}
	}
	for i, r := range runs {
		for _, s := range r.Scenarios {
			if s.Reason != "" {
				reason, _, _ := strings.Cut(s.Reason, "\n")
				fmt.Fprintf(w, "%s: %s %s: %s\n", labels[i], strings.ToUpper(string(s.Verdict)), s.Name, reason)
			}
		}
	}
}

// writeResultsSet writes a set of runs (one results file for several
// gateways) to path, creating its directory.
func writeResultsSet(set *history.ResultsSet, path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return set.WriteFile(path)
}
