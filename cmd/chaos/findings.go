package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/reports"
)

// printFindings prints what is wrong with the gateway in a few lines, above
// the verdict table: one line per finding (a property failed, with its
// counts and first evidence; at most tableWidth columns), each followed by
// the command that runs its first scenario again, then the checks not
// judged, grouped the same way (the JSON and the report have them whole).
func printFindings(w io.Writer, results *history.Results) {
	findings := history.BuildFindings(results)
	if len(findings) == 0 {
		if len(results.Scenarios) > 0 {
			if results.Interrupted {
				fmt.Fprintln(w, "FINDINGS: none in what finished (the run was interrupted)")
			} else {
				fmt.Fprintln(w, "FINDINGS: none (every check judged passed)")
			}
			fmt.Fprintln(w)
		}
		return
	}
	fmt.Fprintln(w, "FINDINGS")
	for _, f := range findings {
		fmt.Fprintln(w, fit(reports.Redact(f.Line()), tableWidth))
		if f.Judged() {
			fmt.Fprintln(w, "    reproduce: "+f.Reproduce)
		} else if len(f.Reasons) > 1 {
			for _, r := range f.ReasonLines() {
				fmt.Fprintln(w, fit(reports.Redact("    because "+r), tableWidth))
			}
		}
	}
	fmt.Fprintln(w)
}

// rerunCommand is the `chaos run` command line with the flags that chose
// the target of this run, its scenarios (--label, each filter as given)
// and how they run (--runtime, --no-leak-check; not --out or output
// flags): run as is, it selects this run's scenarios again but for
// --scenario, which findings give: --scenario with one scenario's name,
// ANDed with the run's filters, selects that scenario alone.
func rerunCommand(o runOptions) string {
	args := []string{"chaos", "run"}
	add := func(flag, v string) {
		if v != "" {
			args = append(args, flag, history.ShellQuote(v))
		}
	}
	c := o.target
	add("--profile", c.Profile)
	if c.Kind == "exec" && c.Profile == "" {
		add("--target", c.Kind)
	}
	add("--gateway-cmd", c.GatewayCmd)
	add("--config-template", c.ConfigTemplate)
	add("--ready-url", c.ReadyURL)
	add("--mcp-path", c.MCPPath)
	if c.CapabilitiesSet {
		args = append(args, "--capabilities", history.ShellQuote(c.Capabilities))
	}
	add("--tool-names", c.ToolNamePattern)
	add("--gateway-image", c.Image)
	add("--runtime", o.runtime)
	for _, l := range o.labels {
		add("--label", l)
	}
	if o.noLeakCheck {
		args = append(args, "--no-leak-check")
	}
	return strings.Join(args, " ")
}
