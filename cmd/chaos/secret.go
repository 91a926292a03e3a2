package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
)

// resolveSecret picks a secret from, in order, a flag value, a file (its
// content with surrounding whitespace trimmed) or an environment variable.
// Giving both the flag and the file is a usage error (exit 2), and so is an
// unreadable or empty file. The flag is visible to every local user in
// /proc/PID/cmdline (ps); the file and the variable are not.
func resolveSecret(flagName, flagValue, fileFlag, file, envName string) (string, error) {
	if flagValue != "" && file != "" {
		return "", usageError(fmt.Errorf("give either --%s or --%s, not both", flagName, fileFlag))
	}
	if flagValue != "" {
		return flagValue, nil
	}
	if file != "" {
		data, err := boundedread.File(file, boundedread.Token)
		if err != nil {
			return "", usageError(fmt.Errorf("--%s: %w", fileFlag, err))
		}
		tok := strings.TrimSpace(string(data))
		if tok == "" {
			return "", usageError(fmt.Errorf("--%s: %s is empty", fileFlag, file))
		}
		return tok, nil
	}
	return os.Getenv(envName), nil
}
