package main

import (
	"fmt"
	"io"

	"github.com/vmcp-chaos/vmcp-chaos/harness"
)

// sweepLeftovers removes the temporary directories that runs killed before
// they could clean up (SIGKILL, a test timeout) left behind, and says so on
// w. A failure to sweep is reported, never fatal.
func sweepLeftovers(w io.Writer) {
	removed, err := harness.SweepLeftovers("")
	if len(removed) > 0 {
		fmt.Fprintf(w, "chaos run: removed %d temporary directories left by dead runs\n", len(removed))
	}
	if err != nil {
		fmt.Fprintf(w, "chaos run: sweeping leftovers: %v\n", err)
	}
}
