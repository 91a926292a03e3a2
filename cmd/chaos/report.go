package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

func newReportCmd() *cobra.Command {
	var out, title string
	var full bool
	cmd := &cobra.Command{
		Use:   "report RESULTS.json... [-o PATH]",
		Short: "Render results (chaos run, the suite, experiment journals) as one HTML page",
		Long: `Render one or more JSON results documents (written by chaos run, by the
Ginkgo suite with VMCP_CHAOS_RESULTS, or an experiment journal) as a single
self-contained HTML page (inline CSS and SVG; it fetches nothing, opens
offline and prints legibly). See reports/README.md.

One file: its summary, scorecard, and every scenario's checks, timeline,
fault windows (latency before, during and after; recovery) and error
samples. Several files of the same subject (the catalogue, or the same
experiment): first a scorecard with a column per file (one per gateway, or
one gateway's runs over time) marking the scenarios and checks where they
differ, then each run in full. A results set (chaos bench --profile A
--profile B --out F) is a column per gateway, with the bench figures side
by side. Journals of different experiments are
listed, one section each, not compared.

Pages are sized for CI (under 1 MB for the full catalogue, and for a
scorecard of five runs, whatever fails): per scenario, property and verdict
the first and the slowest check are shown, the rest counted, saying where
they are; in a scorecard each run's scenarios are summed up by property
(--full shows everything). A results file of chaos run names its event log
(out/X.events.json beside out/X.json): it is read when it is there; without
it the page shows the events the results keep (every check's evidence, the
faults and state changes) and says how many more the log holds.

Inputs are decoded strictly: invalid UTF-8, trailing data after the JSON,
an unknown verdict or a negative time is an error naming the file and the
byte offset (exit 2). The page is written even when an input holds a
failed scenario (a failed, deviated, aborted or interrupted experiment);
the exit status is then 1.

  chaos report out/results.json -o out/report.html
  chaos report reference.json toolhive.json other.json -o scorecard.html
  chaos report bench.json -o bench.html     # a results set: a column per gateway

` + exitHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkOutPath("out", out, args...); err != nil {
				return err
			}
			in, err := reports.Load(args...)
			if err != nil {
				return usageError(fmt.Errorf("report: %w", err))
			}
			if err := reports.WriteFile(out, in, reports.Options{Title: title, Generated: time.Now(), Full: full}); err != nil {
				return fmt.Errorf("report: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s (%d run(s))\n", out, len(in))
			var failed []string
			for _, x := range in {
				for _, s := range x.Results.Scenarios {
					if s.Verdict == history.VerdictFailed {
						reason, _, _ := strings.Cut(s.Reason, "\n")
						failed = append(failed, fmt.Sprintf("%s: %s: %s", x.Name, s.Name, reason))
					}
				}
			}
			if len(failed) > 0 {
				return &exitError{code: exitFailed, err: fmt.Errorf("report: %d failed scenario(s) in the input:\n  %s", len(failed), strings.Join(failed, "\n  "))}
			}
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "report.html", "write the HTML page here")
	cmd.Flags().StringVar(&title, "title", "", "the page's title (default: from the targets)")
	cmd.Flags().BoolVar(&full, "full", false, "show every check with all its evidence, every failed check's name, finding place, fault window and error text "+
		"(by default each is bounded and the rest counted, so a page of the full catalogue stays under 1 MB however much fails)")
	return cmd
}
