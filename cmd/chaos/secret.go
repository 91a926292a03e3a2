package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/internal/redact"
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
		return checkToken("--"+flagName, flagValue)
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
		return checkToken("--"+fileFlag+" "+file, tok)
	}
	if v := os.Getenv(envName); v != "" { // set but empty: no token, as unset
		return checkToken("$"+envName, v)
	}
	return "", nil
}

// checkToken refuses a token that is blank or holds a control character
// (it could never be sent in an Authorization header as given) and
// registers it for redaction.
func checkToken(from, tok string) (string, error) {
	if strings.TrimSpace(tok) == "" {
		return "", usageError(fmt.Errorf("%s is empty or blank: give a token", from))
	}
	if i := strings.IndexFunc(tok, func(r rune) bool { return r < ' ' || r == 0x7f }); i >= 0 {
		return "", usageError(fmt.Errorf("%s holds a control character at byte %d: give a token on one line", from, i))
	}
	redact.Secret(tok)
	return tok, nil
}
