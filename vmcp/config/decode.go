package config

import "github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"

// Error is a configuration error located in a file: "FILE:LINE: FIELD: MSG",
// e.g. `vmcp.yaml:12: backends[1].url: invalid URL "ftp://x": scheme must
// be http or https` (the strict YAML package's one located error type).
type Error = strictyaml.Error

// decoder locates errors: the strict YAML decoder of the file knows the
// line of every field.
type decoder struct{ *strictyaml.Decoder }

func (d decoder) errf(field, format string, args ...any) *Error {
	return d.Errf(nil, field, format, args...)
}

// SetLine records the line a backend's entry starts on.
func (b *Backend) SetLine(line int) { b.Line = line }
