package reports

import "github.com/vmcp-chaos/vmcp-chaos/internal/redact"

// Redact removes credentials from free text (redact.Text, the one
// redaction of every output of the CLI): error texts, reasons, notes and
// check observations pass through it before they are rendered.
func Redact(s string) string { return redact.Text(s) }
