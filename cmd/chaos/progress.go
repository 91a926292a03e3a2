package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

// newProgress returns the function that prints a line per scenario as it
// ends (counter, elapsed time, verdict, name, duration); verbose adds the
// reason, the checks that failed or did not apply, and the key figures;
// quiet prints nothing.
func newProgress(w io.Writer, total int, quiet, verbose bool) func(history.ScenarioResult) {
	start, done := time.Now(), 0
	width := len(fmt.Sprint(total))
	return func(r history.ScenarioResult) {
		done++
		if quiet {
			return
		}
		fmt.Fprintf(w, "[%*d/%d %7s] %-12s %s (%s)\n", width, done, total, elapsed(time.Since(start)),
			reports.Badge(&r), r.Name+agreedNote(r.Agreed), r.Duration.D().Round(time.Millisecond))
		if !verbose {
			return
		}
		indent := "        "
		var lines []string
		if r.Reason != "" {
			lines = append(lines, reports.Redact(r.Reason))
		}
		for _, c := range r.Checks {
			switch c.Verdict {
			case history.CheckFailed:
				lines = append(lines, fmt.Sprintf("✗ %s: expected %s; observed %s", c.Name, c.Expected, reports.Redact(c.Observed)))
			case history.CheckNotApplicable:
				lines = append(lines, fmt.Sprintf("– %s: not applicable: %s", c.Name, c.Reason))
			case history.CheckInconclusive:
				lines = append(lines, fmt.Sprintf("? %s: inconclusive: %s", c.Name, reports.Redact(c.Reason)))
			}
		}
		for _, s := range r.SkippedChecks {
			lines = append(lines, "skipped: "+s)
		}
		if f := keyFigures(r.Figures); f != "-" {
			lines = append(lines, "figures: "+f)
		}
		for _, l := range lines {
			fmt.Fprintf(w, "%s%s\n", indent, strings.ReplaceAll(l, "\n", "\n"+indent))
		}
	}
}

// elapsed formats the run's elapsed time as 1m02s or 12.3s.
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}

// agreedNote is " [modern→2025-06-18]" when the gateway agreed another
// protocol revision than a client asked for (the checks followed it).
func agreedNote(agreed []string) string {
	if len(agreed) == 0 {
		return ""
	}
	return " [" + strings.Join(agreed, ", ") + "]"
}
