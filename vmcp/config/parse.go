package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// Load reads and parses the configuration file at path.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read config: %w", err)
	}
	return Parse(data, path)
}

// Parse decodes, defaults and validates a configuration. file is used in
// error messages only. Environment variables (the bearer token) are read
// with os.LookupEnv.
func Parse(data []byte, file string) (*Config, error) {
	return ParseWithEnv(data, file, os.LookupEnv)
}

// ParseWithEnv is Parse with an injectable environment lookup.
func ParseWithEnv(data []byte, file string, lookupEnv func(string) (string, bool)) (*Config, error) {
	d := &decoder{file: file}
	var doc yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: file, Msg: "empty configuration: at least `backends` is required"}
		}
		return nil, &Error{File: file, Line: yamlErrLine(err), Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		return nil, d.errf(&extra, "", "more than one YAML document; put the whole configuration in one")
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	cfg := &Config{File: file}
	if err := d.root(root, cfg); err != nil {
		return nil, err
	}
	applyDefaults(cfg)
	if err := validate(d, root, cfg, lookupEnv); err != nil {
		return nil, err
	}
	return cfg, nil
}

var yamlLineRE = regexp.MustCompile(`line (\d+)`)

func yamlErrLine(err error) int {
	m := yamlLineRE.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	var n int
	fmt.Sscanf(m[1], "%d", &n)
	return n
}

func (d *decoder) root(n *yaml.Node, cfg *Config) error {
	return d.mapping(n, "", map[string]fieldFunc{
		"name":          d.str(&cfg.Name),
		"backends":      d.backends(&cfg.Backends),
		"aggregation":   d.aggregation(&cfg.Aggregation),
		"timeouts":      d.timeouts(&cfg.Timeouts),
		"incomingAuth":  d.incomingAuth(&cfg.IncomingAuth),
		"limits":        d.limits(&cfg.Limits),
		"pool":          d.pool(&cfg.Pool),
		"health":        d.health(&cfg.Health),
		"breaker":       d.breaker(&cfg.Breaker),
		"metrics":       d.metrics(&cfg.Metrics),
		"optimizer":     d.optimizer(&cfg.Optimizer),
		"notifications": d.notifications(&cfg.Notifications),
	})
}

func (d *decoder) backends(dst *[]Backend) fieldFunc {
	return func(n *yaml.Node, path string) error {
		if n.Kind != yaml.SequenceNode {
			return d.errf(n, path, "must be a list of backends, got %s", kindName(n))
		}
		for i, item := range n.Content {
			var b Backend
			b.Line = item.Line
			var transport, protocol string
			p := fmt.Sprintf("%s[%d]", path, i)
			err := d.mapping(item, p, map[string]fieldFunc{
				"name":      d.str(&b.Name),
				"url":       d.str(&b.URL),
				"transport": d.str(&transport),
				"command":   d.strList(&b.Command),
				"env":       d.strMap(&b.Env),
				"headers":   d.strMap(&b.Headers),
				"protocol":  d.str(&protocol),
				"probe":     d.str(&b.Probe),
				"keepalive": d.keepalive(&b.Keepalive),
			})
			if err != nil {
				return err
			}
			b.Transport = Transport(transport)
			b.Protocol = Protocol(protocol)
			*dst = append(*dst, b)
		}
		return nil
	}
}

func (d *decoder) aggregation(a *Aggregation) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{
			"conflictResolution": d.str(&a.ConflictResolution),
			"prefixFormat":       d.str(&a.PrefixFormat),
			"priorityOrder":      d.strList(&a.PriorityOrder),
			// toolhive nests the format under conflictResolutionConfig.
			"conflictResolutionConfig": func(n *yaml.Node, path string) error {
				return d.mapping(n, path, map[string]fieldFunc{
					"prefixFormat":  d.str(&a.PrefixFormat),
					"priorityOrder": d.strList(&a.PriorityOrder),
				})
			},
		})
	}
}

func (d *decoder) timeouts(t *Timeouts) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{
			"initialize":  d.duration(&t.Initialize),
			"call":        d.duration(&t.Call),
			"list":        d.duration(&t.List),
			"close":       d.duration(&t.Close),
			"sessionIdle": d.duration(&t.SessionIdle),
		})
	}
}

func (d *decoder) incomingAuth(a *IncomingAuth) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{
			"type":         d.str(&a.Type),
			"tokenEnv":     d.str(&a.TokenEnv),
			"tokenFile":    d.str(&a.TokenFile),
			"allowNetwork": d.boolean(&a.AllowNetwork),
		})
	}
}

func (d *decoder) limits(l *Limits) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{
			"maxResponseBytes":   d.size(&l.MaxResponseBytes),
			"maxToolsPerBackend": d.positiveInt(&l.MaxToolsPerBackend),
			"maxSessions":        d.positiveInt(&l.MaxSessions),
		})
	}
}

func (d *decoder) pool(p *Pool) fieldFunc {
	return func(n *yaml.Node, path string) error {
		return d.mapping(n, path, map[string]fieldFunc{
			"size": d.positiveInt(&p.Size),
		})
	}
}

func applyDefaults(cfg *Config) {
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	for i := range cfg.Backends {
		b := &cfg.Backends[i]
		if b.Transport == "" {
			if len(b.Command) > 0 {
				b.Transport = TransportStdio
			} else {
				b.Transport = TransportStreamableHTTP
			}
		}
		if b.Protocol == "" {
			b.Protocol = ProtocolAuto
		}
	}
	a := &cfg.Aggregation
	if a.ConflictResolution == "" {
		a.ConflictResolution = ConflictPrefix
	}
	if a.PrefixFormat == "" {
		a.PrefixFormat = DefaultPrefixFormat
	}
	t := &cfg.Timeouts
	if t.Initialize == 0 {
		t.Initialize = DefaultInitialize
	}
	if t.Call == 0 {
		t.Call = DefaultCall
	}
	if t.List == 0 {
		t.List = DefaultList
	}
	if t.Close == 0 {
		t.Close = DefaultClose
	}
	if t.SessionIdle == 0 {
		t.SessionIdle = DefaultSessionIdle
	}
	if cfg.IncomingAuth.Type == "" {
		cfg.IncomingAuth.Type = AuthAnonymous
	}
	if cfg.Limits.MaxResponseBytes == 0 {
		cfg.Limits.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.Limits.MaxToolsPerBackend == 0 {
		cfg.Limits.MaxToolsPerBackend = DefaultMaxToolsPerBackend
	}
	if cfg.Limits.MaxSessions == 0 {
		cfg.Limits.MaxSessions = DefaultMaxSessions
	}
	if cfg.Pool.Size == 0 {
		cfg.Pool.Size = DefaultPoolSize
	}
	applyResilienceDefaults(cfg)
}

var backendNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// validate checks cross-field rules. root locates errors in the file.
func validate(d *decoder, root *yaml.Node, cfg *Config, lookupEnv func(string) (string, bool)) error {
	at := func(path ...string) *yaml.Node { return locate(root, path...) }
	if len(cfg.Backends) == 0 {
		return d.errf(at("backends"), "backends", "at least one backend is required")
	}
	first := map[string]int{}
	for i, b := range cfg.Backends {
		p := fmt.Sprintf("backends[%d]", i)
		idx := fmt.Sprint(i)
		switch {
		case b.Name == "":
			return d.errf(at("backends", idx), p+".name", "is required")
		case !backendNameRE.MatchString(b.Name):
			return d.errf(at("backends", idx, "name"), p+".name", "%q is not a valid backend name: use letters, digits, '_', '.', '-'", b.Name)
		}
		if line, dup := first[b.Name]; dup {
			return d.errf(at("backends", idx, "name"), p+".name", "duplicate backend name %q (first defined on line %d); backend names must be unique", b.Name, line)
		}
		first[b.Name] = b.Line
		switch b.Protocol {
		case ProtocolAuto, ProtocolLegacy, ProtocolModern:
		default:
			return d.errf(at("backends", idx, "protocol"), p+".protocol", "unknown protocol %q: use auto, legacy or modern", b.Protocol)
		}
		switch b.Transport {
		case TransportStreamableHTTP, TransportSSE:
			if len(b.Command) > 0 {
				return d.errf(at("backends", idx, "command"), p+".command", "only stdio backends take a command (transport is %s)", b.Transport)
			}
			if b.URL == "" {
				return d.errf(at("backends", idx), p+".url", "is required for transport %s", b.Transport)
			}
			if err := checkURL(b.URL); err != nil {
				return d.errf(at("backends", idx, "url"), p+".url", "%v", err)
			}
		case TransportStdio:
			if len(b.Command) == 0 || b.Command[0] == "" {
				return d.errf(at("backends", idx), p+".command", "is required for transport stdio (a list such as [\"my-server\", \"--stdio\"])")
			}
			if b.URL != "" {
				return d.errf(at("backends", idx, "url"), p+".url", "stdio backends take a command, not a url")
			}
			if len(b.Headers) > 0 {
				return d.errf(at("backends", idx, "headers"), p+".headers", "stdio backends take no HTTP headers")
			}
		default:
			return d.errf(at("backends", idx, "transport"), p+".transport", "unknown transport %q: use streamable-http, sse or stdio", b.Transport)
		}
	}

	a := cfg.Aggregation
	switch a.ConflictResolution {
	case ConflictPrefix, ConflictPriority:
	default:
		return d.errf(at("aggregation", "conflictResolution"), "aggregation.conflictResolution", "unknown strategy %q: use prefix or priority", a.ConflictResolution)
	}
	if n := strings.Count(a.PrefixFormat, "{backend}") + strings.Count(a.PrefixFormat, "{workload}"); n != 1 {
		return d.errf(at("aggregation", "prefixFormat"), "aggregation.prefixFormat", "%q must contain {backend} (or {workload}) exactly once, e.g. \"{backend}_\"", a.PrefixFormat)
	}
	seen := map[string]bool{}
	for i, name := range a.PriorityOrder {
		p := fmt.Sprintf("aggregation.priorityOrder[%d]", i)
		if _, ok := cfg.Backend(name); !ok {
			return d.errf(at("aggregation", "priorityOrder", fmt.Sprint(i)), p, "%q is not a configured backend", name)
		}
		if seen[name] {
			return d.errf(at("aggregation", "priorityOrder", fmt.Sprint(i)), p, "%q is listed twice", name)
		}
		seen[name] = true
	}

	auth := &cfg.IncomingAuth
	switch auth.Type {
	case AuthAnonymous:
		if auth.TokenEnv != "" || auth.TokenFile != "" {
			return d.errf(at("incomingAuth"), "incomingAuth", "only bearer auth takes a token (type is anonymous)")
		}
	case AuthBearer:
		if auth.AllowNetwork {
			return d.errf(at("incomingAuth", "allowNetwork"), "incomingAuth.allowNetwork", "only anonymous auth takes allowNetwork (a bearer-authenticated gateway may listen on any address)")
		}
		switch {
		case auth.TokenEnv != "" && auth.TokenFile != "":
			return d.errf(at("incomingAuth"), "incomingAuth", "give tokenEnv or tokenFile, not both")
		case auth.TokenFile != "":
			tok, err := readTokenFile(d.file, auth.TokenFile)
			if err != nil {
				return d.errf(at("incomingAuth", "tokenFile"), "incomingAuth.tokenFile", "%v", err)
			}
			auth.Token = tok
		case auth.TokenEnv == "":
			return d.errf(at("incomingAuth"), "incomingAuth.tokenEnv", "is required for bearer auth: name the environment variable that holds the token (or use tokenFile)")
		default:
			tok, ok := lookupEnv(auth.TokenEnv)
			if !ok || tok == "" {
				return d.errf(at("incomingAuth", "tokenEnv"), "incomingAuth.tokenEnv", "environment variable %s is not set or empty", auth.TokenEnv)
			}
			auth.Token = tok
		}
	default:
		return d.errf(at("incomingAuth", "type"), "incomingAuth.type", "unknown type %q: use anonymous or bearer", auth.Type)
	}
	if err := validateBounds(d, root, cfg); err != nil {
		return err
	}
	return validateResilience(d, root, cfg)
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

// locate finds the node at a path of mapping keys and sequence indexes,
// returning the deepest node found (for its line).
func locate(n *yaml.Node, path ...string) *yaml.Node {
	cur := n
	for _, p := range path {
		var next *yaml.Node
		switch cur.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(cur.Content); i += 2 {
				if cur.Content[i].Value == p {
					next = cur.Content[i+1]
					break
				}
			}
		case yaml.SequenceNode:
			var idx int
			if _, err := fmt.Sscanf(p, "%d", &idx); err == nil && idx >= 0 && idx < len(cur.Content) {
				next = cur.Content[idx]
			}
		}
		if next == nil {
			return cur
		}
		cur = next
	}
	return cur
}
