package reports

import "regexp"

// Secrets never reach a report: error texts, reasons, notes and check
// observations pass through Redact before they are rendered.
var redactions = []struct {
	re   *regexp.Regexp
	repl string
}{
	// Authorization: Bearer xyz / Proxy-Authorization=Basic xyz
	{regexp.MustCompile(`(?i)\b((?:proxy-)?authorization)(["']?\s*[:=]\s*["']?)[^"'\n,;}]*`), "${1}${2}[redacted]"},
	// a bare bearer or basic credential
	{regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9\-._~+/]{8,}=*`), "${1} [redacted]"},
	// token=..., "api_key": "...", password: ...
	{regexp.MustCompile(`(?i)\b([a-z_\-]*(?:token|secret|password|passwd|api[_-]?key|apikey|credential)s?)(["']?\s*[:=]\s*["']?)([^\s"'&,;})\]]+)`), "${1}${2}[redacted]"},
	// credentials in a URL: scheme://user:pass@host
	{regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.\-]*://)[^/\s:@"']+(?::[^/\s@"']*)?@`), "${1}[redacted]@"},
}

// Redact removes credentials from free text: Authorization header values,
// bearer and basic credentials, token, secret, password and API key
// values, and user:password in URLs.
func Redact(s string) string {
	for _, r := range redactions {
		s = r.re.ReplaceAllString(s, r.repl)
	}
	return s
}
