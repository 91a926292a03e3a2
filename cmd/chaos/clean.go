package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes/containers"
	"github.com/vmcp-chaos/vmcp-chaos/internal/atomicfile"
)

// sweepTimeout bounds one sweep (the Docker engine's probe included).
const sweepTimeout = 45 * time.Second

// swept is what one sweep removed, by kind.
type swept struct {
	dirs, files, docker []string
	errs                []error
}

// sweepDead removes what runs killed before they could clean up (SIGKILL,
// a test timeout) left behind: their temporary directories, the partial
// files of their results and reports in dirs, and their containers,
// networks and images when a Docker engine answers. Their child processes
// need no sweep: they are started with PDEATHSIG and die with them.
// Resources of live processes are never touched.
func sweepDead(ctx context.Context, dirs ...string) swept {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sweepTimeout)
	defer cancel()
	var s swept
	var err error
	if s.dirs, err = runtimes.SweepLeftovers(""); err != nil {
		s.errs = append(s.errs, err)
	}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue // no output folder yet: nothing to sweep
		}
		for _, e := range entries {
			if pid, ok := atomicfile.Owner(e.Name()); ok && !runtimes.ProcessAlive(pid) {
				p := filepath.Join(dir, e.Name())
				if err := os.Remove(p); err != nil {
					s.errs = append(s.errs, err)
				} else {
					s.files = append(s.files, p)
				}
			}
		}
	}
	e, err := containers.Get(ctx)
	var skip *runtimes.SkipError
	switch {
	case err == nil:
		s.docker = e.Swept()
	case !errors.As(err, &skip):
		s.errs = append(s.errs, err)
	}
	return s
}

// report says on w what the sweep removed: one line per kind, or (verbose)
// one line per thing.
func (s swept) report(w io.Writer, who string, verbose bool) {
	for _, k := range []struct {
		what  string
		items []string
	}{{"temporary directories", s.dirs}, {"partial output files", s.files}, {"containers, networks and images", s.docker}} {
		if len(k.items) == 0 {
			continue
		}
		fmt.Fprintf(w, "%s: removed %d %s left by dead runs\n", who, len(k.items), k.what)
		if verbose {
			for _, it := range k.items {
				fmt.Fprintf(w, "  %s\n", it)
			}
		}
	}
	for _, err := range s.errs {
		fmt.Fprintf(w, "%s: sweeping leftovers: %v\n", who, err)
	}
}

// sweepBefore is every starting command's first step: sweep, and say on
// stderr what went.
func sweepBefore(cmd *cobra.Command, who string, dirs ...string) {
	sweepDead(cmd.Context(), dirs...).report(cmd.ErrOrStderr(), who, false)
}

func newCleanCmd() *cobra.Command {
	var dirs []string
	cmd := &cobra.Command{
		Use:   "clean",
		Short: "Remove what killed runs left behind, and say what",
		Long: `Remove what chaos runs killed before they could clean up (SIGKILL, a test
timeout) left behind: their temporary directories, the partial results and
report files in the output folders (--dir, default out), and their Docker
containers, networks and images (when an engine answers). Only what belongs
to processes that no longer run on this host is removed. chaos run, bench,
profile check and experiment run do the same before they start.

Prints each thing removed, or "nothing to clean".`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s := sweepDead(cmd.Context(), dirs...)
			w := cmd.OutOrStdout()
			s.report(w, "chaos clean", true)
			if len(s.dirs)+len(s.files)+len(s.docker) == 0 && len(s.errs) == 0 {
				fmt.Fprintln(w, "chaos clean: nothing to clean")
			}
			if len(s.errs) > 0 {
				return errors.Join(s.errs...)
			}
			return nil
		},
	}
	cmd.Flags().StringArrayVar(&dirs, "dir", []string{"out"}, "output folder to sweep of partial files (repeatable)")
	return cmd
}
