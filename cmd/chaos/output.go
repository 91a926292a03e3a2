package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

// checkOutput rejects contradictory output flags.
func (o runOptions) checkOutput() error {
	if o.noHTML && o.html != "" {
		return fmt.Errorf("run: --html and --no-html contradict each other")
	}
	if o.quiet && o.verbose {
		return fmt.Errorf("run: --quiet and --verbose contradict each other")
	}
	inputs := []string{o.target.Profile, o.target.ConfigTemplate}
	if o.out != "" { // --out "": no results file
		if err := checkOutPath("out", o.out, inputs...); err != nil {
			return err
		}
	}
	if html := o.htmlPath(); html != "" {
		if err := checkOutPath("html", html, inputs...); err != nil {
			return err
		}
		return checkDistinct("out", o.out, "html", html)
	}
	return nil
}

// htmlPath is where the report goes, "" for none: --html, else the
// results file's name with .html (out/X.json → out/X.html), so a second
// run into the same folder keeps the first run's report.
func (o runOptions) htmlPath() string {
	switch {
	case o.noHTML:
		return ""
	case o.html != "":
		return o.html
	case o.out != "":
		if filepath.Ext(o.out) == ".html" {
			return strings.TrimSuffix(o.out, ".html") + ".report.html"
		}
		return strings.TrimSuffix(o.out, filepath.Ext(o.out)) + ".html"
	}
	return filepath.Join("out", "results.html")
}

// finishRun prints the table (unless quiet) and the summary line, writes
// the JSON results and the HTML report, and returns the run's exit error:
// 2 when an output could not be written, 130 (with interruption) when
// interrupted, 1 when a scenario failed.
func finishRun(w io.Writer, o runOptions, results *history.Results, start time.Time, interruption error) error {
	if !o.quiet {
		fmt.Fprintln(w)
		printFindings(w, results)
		printTable(w, results)
	}
	var writeErr error
	var wrote []string
	if o.out != "" {
		if err := writeResults(results, o.out, o.inlineEvents); err != nil {
			writeErr = fmt.Errorf("run: write results: %w", err)
		} else {
			wrote = append(wrote, "results: "+o.out)
			if !o.inlineEvents {
				wrote = append(wrote, "event log: "+history.EventsPath(o.out))
			}
		}
	}
	if path := o.htmlPath(); path != "" && writeErr == nil {
		in := []reports.Input{{Name: filepath.Base(o.out), Results: results}}
		if err := reports.WriteFile(path, in, reports.Options{Generated: time.Now()}); err != nil {
			writeErr = fmt.Errorf("run: write report: %w", err)
		} else {
			wrote = append(wrote, "report: "+path)
		}
	}
	counts, partial := verdictCounts(results)
	fmt.Fprintf(w, "\n%d passed", counts[history.VerdictPassed])
	if partial > 0 {
		fmt.Fprintf(w, " (%d with checks skipped)", partial)
	}
	fmt.Fprintf(w, ", %d failed, %d inconclusive, %d skipped", counts[history.VerdictFailed], counts[history.VerdictInconclusive], counts[history.VerdictSkipped])
	if n := counts[history.VerdictInterrupted]; n > 0 {
		fmt.Fprintf(w, ", %d interrupted", n)
	}
	fmt.Fprintf(w, " in %s\n", time.Since(start).Round(time.Millisecond))
	for _, s := range wrote {
		fmt.Fprintln(w, s)
	}
	switch {
	case writeErr != nil:
		return usageError(writeErr)
	case results.Interrupted:
		return &exitError{code: exitInterrupted, err: interruption}
	case results.Failed():
		return &exitError{code: exitFailed, err: fmt.Errorf("%d scenario(s) failed, %d inconclusive (not judged)",
			counts[history.VerdictFailed], counts[history.VerdictInconclusive])}
	}
	return nil
}

// writeResults writes the results bounded, with the complete event log
// beside them (history.Results.WriteSplit), or with every event inline.
func writeResults(results *history.Results, path string, inline bool) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if inline {
		return results.WriteFile(path)
	}
	return results.WriteSplit(path)
}
