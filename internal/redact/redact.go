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

// patterns are applied line by line, each only to a line (lowercased)
// holding one of its keywords: most lines of a results document hold no
// credential, and the four expressions over a whole 10 MB document took
// 7.4 s (BenchmarkTextResults, loaded 2-core machine); line by line with
// the keywords, 0.34 s.
//
// keyed marks the patterns of a key and its value (group 2 the separator,
// group 3 the value): a JSON key's value that is not a string (a number,
// true, an object, ...) is never a credential and is left alone, so that
// the JSON stays valid.
var patterns = []struct {
	keywords []string
	re       *regexp.Regexp
	repl     string
	keyed    bool
}{
	// Authorization: Bearer xyz / Proxy-Authorization=Basic xyz
	{[]string{"authorization"}, regexp.MustCompile(`(?i)\b((?:proxy-)?authorization)((?:\\?["'])?\s*[:=]\s*(?:\\?["'])?)([^"'\\\s,;}][^"'\\\n,;}]*)`), "${1}${2}" + Mark, true},
	// a bare bearer or basic credential
	{[]string{"bearer", "basic"}, regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*`), "${1} " + Mark, false},
	// token=..., "api_key": "...", password: ...
	{[]string{"token", "secret", "passw", "apikey", "api_key", "api-key", "credential"},
		regexp.MustCompile(`(?i)\b([a-z_\-]*(?:token|secret|password|passwd|api[_-]?key|apikey|credential)s?)((?:\\?["'])?\s*[:=]\s*(?:\\?["'])?)([^\s"'\\&,;})\]]+)`), "${1}${2}" + Mark, true},
	// credentials in a URL: scheme://user:pass@host, scheme://token@host
	{[]string{"@"}, regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s:@"'\\]+(?::[^/\s@"'\\]*)?@`), "${1}" + Mark + "@", false},
}

// minSecret is the shortest registered secret redacted by value: shorter
// ones ("a", "x") would mangle every line.
const minSecret = 6

var (
	mu      sync.RWMutex
	secrets []string // longest first
)

// Secret registers a credential the process holds: from now on Text
// replaces its value wherever it appears. Values shorter than 6 bytes
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
	var b strings.Builder
	changed := false
	for start := 0; start <= len(s); {
		end := strings.IndexByte(s[start:], '\n')
		if end < 0 {
			end = len(s)
		} else {
			end += start
		}
		line := s[start:end]
		out := redactLine(line)
		if out != line && !changed {
			changed = true
			b.Grow(len(s))
			b.WriteString(s[:start])
		}
		if changed {
			b.WriteString(out)
			if end < len(s) {
				b.WriteByte('\n')
			}
		}
		start = end + 1
	}
	if !changed {
		return s
	}
	return b.String()
}

// redactLine applies every pattern whose keyword the line holds.
func redactLine(line string) string {
	lower := strings.ToLower(line)
	for _, p := range patterns {
		if !slices.ContainsFunc(p.keywords, func(k string) bool { return strings.Contains(lower, k) }) {
			continue
		}
		if p.keyed {
			line = replaceKeyed(p.re, line, p.repl)
		} else {
			line = p.re.ReplaceAllString(line, p.repl)
		}
		lower = strings.ToLower(line)
	}
	return line
}

// replaceKeyed replaces the matches of a key-and-value pattern, except a
// JSON key's value that is not a string: the separator opens with the
// key's closing quote (`"token": 5`, `\"token\": {`) and does not end
// with the value's opening one; and except a value already redacted, so
// that Text of redacted text changes nothing (chaos report redacts what
// it reads, then each text as it renders it: "password=[redacted]" must
// not become "password=[redacted]]").
func replaceKeyed(re *regexp.Regexp, line, repl string) string {
	var b strings.Builder
	last := 0
	for _, m := range re.FindAllStringSubmatchIndex(line, -1) {
		sep := line[m[4]:m[5]]
		jsonKey := strings.HasPrefix(sep, `"`) || strings.HasPrefix(sep, `\"`)
		if (jsonKey && !strings.HasSuffix(sep, `"`)) || strings.HasPrefix(line[m[6]:], Mark) {
			continue
		}
		b.WriteString(line[last:m[0]])
		b.Write(re.ExpandString(nil, repl, line, m))
		last = m[1]
	}
	if last == 0 {
		return line
	}
	b.WriteString(line[last:])
	return b.String()
}
