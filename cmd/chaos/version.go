package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/vmcp-chaos/vmcp-chaos/harness/history"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the harness version: module version, commit, Go version, results schema",
		Long: `Print which harness this binary is: the module version ("devel" for a build
from a source tree), the VCS commit (else the commit the build stamped with
-ldflags "$(.ci/stamp)", as .ci/run and task install do; "unknown", with why,
when built with -buildvcs=false and no stamp, or outside a repository), the Go
version and the JSON results schema version.
chaos --version prints the same. Results, experiment journals and bench files
carry the first two as harnessVersion, and chaos report shows it per run.

` + exitHelp,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprint(cmd.OutOrStdout(), history.Version().Long())
			return err
		},
	}
}
