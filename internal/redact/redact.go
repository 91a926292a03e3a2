// Package redact removes credentials from everything the chaos CLI
// prints or writes: ready lines, progress and log lines, errors, results
// and journals (JSON), reports. Text is the one function every output
// path calls (reports.Redact is Text); Writer applies it line by line to
// a stream, and Secret registers a token the process holds (a --token, a
// token file's content, an experiment's authEnv value) so that its value
// is redacted wherever it appears, whatever surrounds it.
//
// Text never removes a quote or a backslash, so it keeps JSON valid: a
// results document or a journal is redacted line by line as it is
// written.
package redact

import (
	"regexp"
	"slices"
	"strings"
	"sync"
)

// Mark replaces every credential.
const Mark = "[redacted]"

var patterns = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Authorization: Bearer xyz / Proxy-Authorization=Basic xyz
	{regexp.MustCompile(`(?i)\b((?:proxy-)?authorization)(\\?["']?\s*[:=]\s*\\?["']?)[^"'\\\n,;}]*`), "${1}${2}" + Mark},
	// a bare bearer or basic credential
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*`), "${1} " + Mark},
	// token=..., "api_key": "...", password: ...
	{regexp.MustCompile(`(?i)\b([a-z_\-]*(?:token|secret|password|passwd|api[_-]?key|apikey|credential)s?)(\\?["']?\s*[:=]\s*\\?["']?)([^\s"'\\&,;})\]]+)`), "${1}${2}" + Mark},
	// credentials in a URL: scheme://user:pass@host, scheme://token@host
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s:@"'\\]+(?::[^/\s@"'\\]*)?@`), "${1}" + Mark + "@"},
}

// minSecret is the shortest registered secret redacted by value: shorter
// ones ("a", "x") would mangle every line.
const minSecret = 4

var (
	mu      sync.RWMutex
	secrets []string // longest first
)

// Secret registers a credential the process holds: from now on Text
// replaces its value wherever it appears. Values shorter than 4 bytes
// (after trimming spaces) are not registered: replacing them would mangle
// ordinary text.
func Secret(value string) {
	value = strings.TrimSpace(value)
	if len(value) < minSecret {
		return
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Contains(secrets, value) {
		secrets = append(secrets, value)
		slices.SortFunc(secrets, func(a, b string) int { return len(b) - len(a) })
	}
}

// Text removes credentials from free text: the values of registered
// secrets, Authorization header values, bearer and basic credentials,
// token, secret, password and API key values, and the user information
// of URLs (scheme://user:password@host).
func Text(s string) string {
	mu.RLock()
	for _, v := range secrets {
		s = strings.ReplaceAll(s, v, Mark)
	}
	mu.RUnlock()
	for _, p := range patterns {
		s = p.re.ReplaceAllString(s, p.repl)
	}
	return s
}
