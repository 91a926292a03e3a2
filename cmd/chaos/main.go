// Command chaos is the vmcp-chaos command line: fake MCP backends, the
// reference vMCP gateway and chaos experiments against real deployments.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
)

func main() {
	// Every command handles SIGINT and SIGTERM through ctx: it stops, removes
	// what it owns, writes what finished and exits 130.
	containers.LeaveSignalsToCaller()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// The first signal lets `chaos run` report what finished; a second one
	// kills as usual.
	go func() {
		<-ctx.Done()
		stop()
	}()
	root := newRootCmd()
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err != nil {
		fmt.Fprintln(stderr, "chaos:", err)
	}
	_, _ = stdout.Flush(), stderr.Flush()
	os.Exit(exitStatus(err, ctx.Err() != nil))
}

// stdout and stderr are every command's output: credentials (URL user
// information, tokens, registered secrets) never reach them (package
// redact). Only the MCP protocol of chaos backend --stdio goes to
// os.Stdout as it is.
var (
	stdout = redact.NewWriter(os.Stdout)
	stderr = redact.NewWriter(os.Stderr)
)

// exitStatus is the process's exit status: 130 once a signal arrived,
// whatever the command returned (a server that stopped cleanly, or a
// command whose work the signal cut short, included), else the command's
// own status.
func exitStatus(err error, interrupted bool) int {
	switch {
	case interrupted:
		return exitInterrupted
	case err != nil:
		return exitCode(err)
	}
	return exitOK
}

// exitError carries a specific exit code out of a subcommand.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "chaos",
		Short:         "Chaos and acceptance testing for vMCP gateways",
		Long:          "Chaos and acceptance testing for vMCP gateways.\n\n" + exitHelp,
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       history.Version().String(),
		// Every subcommand's flags are checked first (none defines its own
		// persistent pre-run).
		PersistentPreRunE: refuseNonPositiveDurations,
	}
	// --version prints what `chaos version` prints.
	root.Flags().BoolP("version", "v", false, "print the harness version (as chaos version)")
	root.SetVersionTemplate(history.Version().Long())
	root.AddCommand(newProfileCmd(), newBackendCmd(), newVMCPCmd(), newRunCmd(),
		newProxyCmd(), newExperimentCmd(), newReportCmd(), newBenchCmd(), newVersionCmd(), newCleanCmd(),
		newKubeCmd())
	// cobra's completion command only prints its help when not given a
	// shell: runnable, it refuses an unknown one (chaos completion bogus,
	// exit 2) instead.
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		if c.Name() == "completion" {
			c.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
		}
	}
	withUsageExits(root)
	return root
}

// groupCmd is a command that holds subcommands; run alone it prints its
// help.
func groupCmd(use, short, long string, subs ...*cobra.Command) *cobra.Command {
	cmd := &cobra.Command{Use: use, Short: short, Long: long, Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() }}
	cmd.AddCommand(subs...)
	return cmd
}
