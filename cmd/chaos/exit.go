package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Exit statuses of every chaos command (documented in `chaos --help` and
// README.md).
const (
	exitOK          = 0   // all passed
	exitFailed      = 1   // a scenario failed (or a command failed at run time)
	exitUsage       = 2   // bad flag, argument, config or input file
	exitInterrupted = 130 // SIGINT or SIGTERM
)

// exitHelp is the exit status paragraph of the help texts.
const exitHelp = `Exit status: 0 all passed; 1 a scenario failed (or the command failed while
running); 2 usage or configuration error (bad flag, argument, config or
input file); 130 interrupted (SIGINT/SIGTERM).`

// usageError marks err as a usage or configuration error (exit status 2).
func usageError(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: exitUsage, err: err}
}

// exitCode is the exit status for an error a command returned.
func exitCode(err error) int {
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	// cobra's own usage errors (unknown command, bad arguments).
	cobraUsage := []string{"unknown command", "unknown flag", "unknown shorthand flag", "accepts ", "requires at least", "invalid argument"}
	if slices.ContainsFunc(cobraUsage, func(p string) bool { return strings.HasPrefix(err.Error(), p) }) {
		return exitUsage
	}
	return exitFailed
}

// withUsageExits makes flag and argument errors of cmd and its
// subcommands exit with status 2.
func withUsageExits(cmd *cobra.Command) {
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError(err) })
	var wrap func(c *cobra.Command)
	wrap = func(c *cobra.Command) {
		if args := c.Args; args != nil {
			c.Args = func(cmd *cobra.Command, a []string) error { return usageError(args(cmd, a)) }
		}
		for _, sub := range c.Commands() {
			wrap(sub)
		}
	}
	wrap(cmd)
}

// refuseNonPositiveDurations is every command's first check: a duration
// flag given as zero or negative is a usage error (exit 2) naming the flag,
// whatever the command (no chaos duration flag means "none" at 0).
func refuseNonPositiveDurations(cmd *cobra.Command, _ []string) error {
	var err error
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if err != nil || !f.Changed || f.Value.Type() != "duration" {
			return
		}
		if d, perr := time.ParseDuration(f.Value.String()); perr == nil && d <= 0 {
			err = usageError(fmt.Errorf("--%s %s: want a duration > 0", f.Name, f.Value))
		}
	})
	return err
}
