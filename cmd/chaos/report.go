package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

func newReportCmd() *cobra.Command {
	var out, title string
	cmd := &cobra.Command{
		Use:   "report RESULTS.json... [-o PATH]",
		Short: "Render results (chaos run, the suite, experiment journals) as one HTML page",
		Long: `Render one or more JSON results documents (written by chaos run, by the
Ginkgo suite with VMCP_CHAOS_RESULTS, or an experiment journal) as a single
self-contained HTML page (inline CSS and SVG; it fetches nothing, opens
offline and prints legibly). See reports/README.md.

One file: its summary, scorecard, and every scenario's checks, timeline,
fault windows (latency before, during and after; recovery) and error
samples. Several files: first a scorecard with a column per file (one per
gateway, or one gateway's runs over time) marking the scenarios and checks
where they differ, then each run in full.

  chaos report out/results.json -o out/report.html
  chaos report reference.json toolhive.json other.json -o scorecard.html

` + exitHelp,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := reports.Load(args...)
			if err != nil {
				return usageError(fmt.Errorf("report: %w", err))
			}
			if err := reports.WriteFile(out, in, reports.Options{Title: title, Generated: time.Now()}); err != nil {
				return fmt.Errorf("report: %w", err)
			}
			fmt.Fprintf(cmd.OutOrStdout(), "report: %s (%d run(s))\n", out, len(in))
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "out", "o", "report.html", "write the HTML page here")
	cmd.Flags().StringVar(&title, "title", "", "the page's title (default: from the targets)")
	return cmd
}
