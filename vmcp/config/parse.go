package config

import (
	"cmp"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strings"

	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
	"github.com/vmcp-chaos/vmcp-chaos/internal/strictyaml"
)

// Load reads and parses the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := boundedread.File(path, boundedread.Config)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// Parse decodes, defaults and validates a configuration. file is used in
// error messages only. Environment variables (the bearer token) are read
// with os.LookupEnv.
func Parse(data []byte, file string) (*Config, error) {
	return ParseWithEnv(data, file, os.LookupEnv)
}

// ParseWithEnv is Parse with an injectable environment lookup. Decoding
// is strict (package strictyaml): unknown or duplicate keys, wrong types,
// bad durations and sizes are errors naming file:line: field.
func ParseWithEnv(data []byte, file string, lookupEnv func(string) (string, bool)) (*Config, error) {
	cfg := &Config{File: file}
	sd, err := strictyaml.Decode(data, file, "a configuration with at least `backends`", cfg)
	if err != nil {
		return nil, err
	}
	d := decoder{sd}
	a := &cfg.Aggregation
	if n := a.Nested; n != nil { // toolhive nests the format under conflictResolutionConfig
		a.PrefixFormat = cmp.Or(n.PrefixFormat, a.PrefixFormat)
		if n.PriorityOrder != nil {
			a.PriorityOrder = n.PriorityOrder
		}
		a.Nested = nil
	}
	cfg.Health.Enabled = cfg.Health.Enabled || (d.Has("health") && !d.Has("health.enabled"))
	cfg.Breaker.Enabled = cfg.Breaker.Enabled || (d.Has("breaker") && !d.Has("breaker.enabled"))
	applyDefaults(cfg)
	if err := validate(d, cfg, lookupEnv); err != nil {
		return nil, err
	}
	return cfg, nil
}

func applyDefaults(cfg *Config) {
	cfg.Name = cmp.Or(cfg.Name, DefaultName)
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		if b.Transport == "" {
			if len(b.Command) > 0 {
				b.Transport = TransportStdio
			} else {
				b.Transport = TransportStreamableHTTP
			}
		}
		b.Protocol = cmp.Or(b.Protocol, ProtocolAuto)
	}
	a := &cfg.Aggregation
	a.ConflictResolution = cmp.Or(a.ConflictResolution, ConflictPrefix)
	a.PrefixFormat = cmp.Or(a.PrefixFormat, DefaultPrefixFormat)
	t := &cfg.Timeouts
	t.Initialize = cmp.Or(t.Initialize, DefaultInitialize)
	t.Call = cmp.Or(t.Call, DefaultCall)
	t.List = cmp.Or(t.List, DefaultList)
	t.Close = cmp.Or(t.Close, DefaultClose)
	t.SessionIdle = cmp.Or(t.SessionIdle, DefaultSessionIdle)
	cfg.IncomingAuth.Type = cmp.Or(cfg.IncomingAuth.Type, AuthAnonymous)
	cfg.Limits.MaxResponseBytes = cmp.Or(cfg.Limits.MaxResponseBytes, DefaultMaxResponseBytes)
	cfg.Limits.MaxToolsPerBackend = cmp.Or(cfg.Limits.MaxToolsPerBackend, DefaultMaxToolsPerBackend)
	cfg.Limits.MaxSessions = cmp.Or(cfg.Limits.MaxSessions, DefaultMaxSessions)
	cfg.Pool.Size = cmp.Or(cfg.Pool.Size, DefaultPoolSize)
	applyResilienceDefaults(cfg)
}

var backendNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// validate checks cross-field rules. root locates errors in the file.
func validate(d decoder, cfg *Config, lookupEnv func(string) (string, bool)) error {
	if len(cfg.Backends) == 0 {
		return d.errf("backends", "at least one backend is required")
	}
	first := map[string]int{}
	for i, b := range cfg.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		switch {
		case b.Name == "":
			return d.errf(p+".name", "is required")
		case !backendNameRE.MatchString(b.Name):
			return d.errf(p+".name", "%q is not a valid backend name: use letters, digits, '_', '.', '-'", b.Name)
		}
		if line, dup := first[b.Name]; dup {
			return d.errf(p+".name", "duplicate backend name %q (first defined on line %d); backend names must be unique", b.Name, line)
		}
		first[b.Name] = b.Line
		switch b.Protocol {
		case ProtocolAuto, ProtocolLegacy, ProtocolModern:
		default:
			return d.errf(p+".protocol", "unknown protocol %q: use auto, legacy or modern", b.Protocol)
		}
		switch b.Transport {
		case TransportStreamableHTTP, TransportSSE:
			if len(b.Command) > 0 {
				return d.errf(p+".command", "only stdio backends take a command (transport is %s)", b.Transport)
			}
			if b.URL == "" {
				return d.errf(p+".url", "is required for transport %s", b.Transport)
			}
			if err := checkURL(b.URL); err != nil {
				return d.errf(p+".url", "%v", err)
			}
		case TransportStdio:
			if len(b.Command) == 0 || b.Command[0] == "" {
				return d.errf(p+".command", "is required for transport stdio (a list such as [\"my-server\", \"--stdio\"])")
			}
			if b.URL != "" {
				return d.errf(p+".url", "stdio backends take a command, not a url")
			}
			if len(b.Headers) > 0 {
				return d.errf(p+".headers", "stdio backends take no HTTP headers")
			}
		default:
			return d.errf(p+".transport", "unknown transport %q: use streamable-http, sse or stdio", b.Transport)
		}
	}

	a := cfg.Aggregation
	switch a.ConflictResolution {
	case ConflictPrefix, ConflictPriority:
	default:
		return d.errf("aggregation.conflictResolution", "unknown strategy %q: use prefix or priority", a.ConflictResolution)
	}
	if n := strings.Count(a.PrefixFormat, "{backend}") + strings.Count(a.PrefixFormat, "{workload}"); n != 1 {
		return d.errf("aggregation.prefixFormat", "%q must contain {backend} (or {workload}) exactly once, e.g. \"{backend}_\"", a.PrefixFormat)
	}
	seen := map[string]bool{}
	for i, name := range a.PriorityOrder {
		p := fmt.Sprintf("aggregation.priorityOrder[%d]", i)
		if _, ok := cfg.Backend(name); !ok {
			return d.errf(p, "%q is not a configured backend", name)
		}
		if seen[name] {
			return d.errf(p, "%q is listed twice", name)
		}
		seen[name] = true
	}

	auth := &cfg.IncomingAuth
	switch auth.Type {
	case AuthAnonymous:
		if auth.TokenEnv != "" || auth.TokenFile != "" {
			return d.errf("incomingAuth", "only bearer auth takes a token (type is anonymous)")
		}
	case AuthBearer:
		if auth.AllowNetwork {
			return d.errf("incomingAuth.allowNetwork", "only anonymous auth takes allowNetwork (a bearer-authenticated gateway may listen on any address)")
		}
		switch {
		case auth.TokenEnv != "" && auth.TokenFile != "":
			return d.errf("incomingAuth", "give tokenEnv or tokenFile, not both")
		case auth.TokenFile != "":
			tok, err := readTokenFile(cfg.File, auth.TokenFile)
			if err != nil {
				return d.errf("incomingAuth.tokenFile", "%v", err)
			}
			auth.Token = tok
		case auth.TokenEnv == "":
			return d.errf("incomingAuth.tokenEnv", "is required for bearer auth: name the environment variable that holds the token (or use tokenFile)")
		default:
			tok, ok := lookupEnv(auth.TokenEnv)
			if !ok || tok == "" {
				return d.errf("incomingAuth.tokenEnv", "environment variable %s is not set or empty", auth.TokenEnv)
			}
			auth.Token = tok
		}
	default:
		return d.errf("incomingAuth.type", "unknown type %q: use anonymous or bearer", auth.Type)
	}
	if err := validateBounds(d, cfg); err != nil {
		return err
	}
	return validateResilience(d, cfg)
}

func checkURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("invalid URL %q: %v", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("invalid URL %q: scheme must be http or https", raw)
	}
	if u.Host == "" {
		return fmt.Errorf("invalid URL %q: host is missing", raw)
	}
	return nil
}
