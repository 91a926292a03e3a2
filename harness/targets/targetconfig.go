package targets

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Environment variables that choose the gateway under test for the Ginkgo
// suite (go test ./scenarios/...); they mirror the flags of `chaos run`
// (see TargetConfig).
const (
	// TargetEnv is "reference" (default) or "exec" (--target).
	TargetEnv = "VMCP_CHAOS_TARGET"
	// GatewayCmdEnv is the exec gateway's command line (--gateway-cmd).
	GatewayCmdEnv = "VMCP_CHAOS_GATEWAY_CMD"
	// ConfigTemplateEnv is the path of the exec gateway's config template
	// (--config-template).
	ConfigTemplateEnv = "VMCP_CHAOS_CONFIG_TEMPLATE"
	// ReadyURLEnv is the exec gateway's readiness URL template
	// (--ready-url).
	ReadyURLEnv = "VMCP_CHAOS_READY_URL"
	// MCPPathEnv is the exec gateway's MCP endpoint path (--mcp-path).
	MCPPathEnv = "VMCP_CHAOS_MCP_PATH"
	// CapabilitiesEnv, when set (even empty), is the capabilities the
	// target declares (--capabilities).
	CapabilitiesEnv = "VMCP_CHAOS_CAPABILITIES"
	// GatewayImageEnv is the exec gateway's container image, for the
	// container scenarios (--gateway-image).
	GatewayImageEnv = "VMCP_CHAOS_GATEWAY_IMAGE"
)

// TargetConfig says which gateway to test, in the terms of the `chaos run`
// flags and the VMCP_CHAOS_* environment variables; Target builds it. Both
// the CLI and the Ginkgo suite go through it, so they agree.
type TargetConfig struct {
	// Profile is the path of a target profile (LoadProfile). With it the
	// target is the exec gateway it describes (Kind "" or "exec"); the
	// exec fields below, when set, override the profile's.
	Profile string
	// Kind is "reference" (default) or "exec".
	Kind string
	// GatewayCmd is the exec gateway's command line, split like a shell
	// would (SplitCommand: quotes and backslashes, no expansion); each word
	// is a template (TemplateData). Empty: our own `chaos vmcp`, from the
	// shipped template.
	GatewayCmd string
	// ConfigTemplate is the path of the exec gateway's config template.
	// Required with GatewayCmd; with the default command it defaults to
	// the shipped ChaosVMCPTemplate.
	ConfigTemplate string
	// ReadyURL is the readiness URL template (default {{.BaseURL}}/status
	// for chaos vmcp, else {{.BaseURL}}<MCPPath>).
	ReadyURL string
	// MCPPath is the MCP endpoint path (default /mcp).
	MCPPath string
	// Capabilities is a ParseCapabilities list; used when CapabilitiesSet.
	// Unset: the reference gateway's for reference and chaos vmcp, none
	// for another exec gateway.
	Capabilities    string
	CapabilitiesSet bool
	// Image is the exec gateway's container image (Exec.Image), used by
	// the container scenarios.
	Image string
	// ToolNamePattern is how the gateway names a backend's tools and
	// prompts, a pattern of {backend} and {tool} (default
	// DefaultToolNamePattern, "{backend}_{tool}"); the fallback for tools
	// not found by their origin marker.
	ToolNamePattern string
}

// TargetConfigFromEnv reads the VMCP_CHAOS_* variables (TargetEnv,
// GatewayCmdEnv, ConfigTemplateEnv, ReadyURLEnv, MCPPathEnv,
// CapabilitiesEnv).
func TargetConfigFromEnv() TargetConfig {
	c := TargetConfig{
		Profile:        os.Getenv(ProfileEnv),
		Kind:           os.Getenv(TargetEnv),
		GatewayCmd:     os.Getenv(GatewayCmdEnv),
		ConfigTemplate: os.Getenv(ConfigTemplateEnv),
		ReadyURL:       os.Getenv(ReadyURLEnv),
		MCPPath:        os.Getenv(MCPPathEnv),
		Image:          os.Getenv(GatewayImageEnv),

		ToolNamePattern: os.Getenv(ToolNamesEnv),
	}
	c.Capabilities, c.CapabilitiesSet = os.LookupEnv(CapabilitiesEnv)
	return c
}

// NeedsChaosBinary reports whether Target will call its chaosBinary
// argument: an exec target with the default command (chaos vmcp).
func (c TargetConfig) NeedsChaosBinary() bool {
	if c.Profile != "" {
		if strings.TrimSpace(c.GatewayCmd) != "" {
			return false
		}
		p, err := LoadProfile(c.Profile)
		return err == nil && p.UsesChaosBinary()
	}
	return c.Kind == "exec" && strings.TrimSpace(c.GatewayCmd) == ""
}

// Target builds the target. chaosBinary returns the chaos binary for the
// default exec command (`chaos vmcp`); it is called only then. Errors name
// the flag (and its environment variable) at fault.
func (c TargetConfig) Target(chaosBinary func() (string, error)) (Target, error) {
	if err := c.checkExecFlags(); err != nil {
		return nil, err
	}
	if c.Profile != "" {
		return c.profileTarget(chaosBinary)
	}
	caps, err := c.checkCapsAndNames()
	if err != nil {
		return nil, err
	}
	switch c.Kind {
	case "", "reference":
		if c.ToolNamePattern != "" && c.ToolNamePattern != DefaultToolNamePattern {
			return nil, fmt.Errorf("--tool-names ($%s) %q: the reference gateway names tools %s", ToolNamesEnv, c.ToolNamePattern, DefaultToolNamePattern)
		}
		if c.GatewayCmd != "" || c.ConfigTemplate != "" || c.ReadyURL != "" {
			return nil, errors.New("--gateway-cmd, --config-template and --ready-url " +
				"($" + GatewayCmdEnv + ", $" + ConfigTemplateEnv + ", $" + ReadyURLEnv + ") need --target exec ($" + TargetEnv + "=exec)")
		}
		return Reference{Caps: caps}, nil
	case "exec":
	default:
		return nil, fmt.Errorf("unknown --target %q (want reference or exec; $%s)", c.Kind, TargetEnv)
	}
	e := Exec{MCPPath: c.MCPPath, ReadyURL: c.ReadyURL, Caps: caps, ToolNames: c.ToolNamePattern, Image: c.Image}
	if c.ConfigTemplate != "" {
		text, err := readConfigTemplateFlag(c.ConfigTemplate)
		if err != nil {
			return nil, err
		}
		e.ConfigTemplate = text
	}
	if strings.TrimSpace(c.GatewayCmd) == "" {
		bin, err := chaosBinary()
		if err != nil {
			return nil, fmt.Errorf("exec target chaos vmcp: %w", err)
		}
		e.TargetName = "chaos-vmcp"
		e.Command = []string{bin, "vmcp", "--config", "{{.ConfigPath}}", "--listen", "{{.Listen}}"}
		if c.ConfigTemplate == "" {
			e.ConfigTemplate = ChaosVMCPTemplate
		}
		e.ReadyURL = cmp.Or(e.ReadyURL, "{{.BaseURL}}/status")
		if !c.CapabilitiesSet {
			e.Caps = DefaultReferenceCapabilities
		}
		return e, nil
	}
	argv, err := SplitCommand(c.GatewayCmd)
	if err != nil {
		return nil, fmt.Errorf("--gateway-cmd ($%s): %w", GatewayCmdEnv, err)
	}
	if c.ConfigTemplate == "" {
		return nil, fmt.Errorf("--gateway-cmd ($%s) needs --config-template ($%s): the shipped template is for chaos vmcp only", GatewayCmdEnv, ConfigTemplateEnv)
	}
	e.Command = argv
	e.TargetName = filepath.Base(argv[0])
	return e, nil
}

// checkCapsAndNames parses --capabilities (nil when not set) and checks
// --tool-names, naming the flag at fault.
func (c TargetConfig) checkCapsAndNames() (Capabilities, error) {
	var caps Capabilities
	if c.CapabilitiesSet {
		var err error
		if caps, err = ParseCapabilities(c.Capabilities); err != nil {
			return nil, fmt.Errorf("--capabilities ($%s): %w", CapabilitiesEnv, err)
		}
	}
	if c.ToolNamePattern != "" {
		if err := ValidateToolNamePattern(c.ToolNamePattern); err != nil {
			return nil, fmt.Errorf("--tool-names ($%s): %w", ToolNamesEnv, err)
		}
	}
	return caps, nil
}

// SplitCommand splits a command line into words the way a POSIX shell
// would for plain words and quotes: blanks separate words; 'single quotes'
// keep everything literally; "double quotes" keep blanks, and a backslash
// in them escapes only " \ $ and `; outside quotes a backslash escapes the
// next character. There is no expansion of any kind ($VAR, globs, ~), so
// template actions such as {{.ConfigPath}} pass through untouched. An
// unterminated quote, a trailing backslash or an empty line is an error.
func SplitCommand(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		inTok bool
	)
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == ' ' || r == '\t' || r == '\n':
			if inTok {
				words = append(words, cur.String())
				cur.Reset()
				inTok = false
			}
		case r == '\\':
			if i+1 >= len(rs) {
				return nil, fmt.Errorf("command %q ends with a backslash", s)
			}
			i++
			cur.WriteRune(rs[i])
			inTok = true
		case r == '\'':
			j := i + 1
			for j < len(rs) && rs[j] != '\'' {
				j++
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("command %q: unterminated single quote at character %d", s, i+1)
			}
			cur.WriteString(string(rs[i+1 : j]))
			i, inTok = j, true
		case r == '"':
			j := i + 1
			for ; j < len(rs) && rs[j] != '"'; j++ {
				if rs[j] == '\\' && j+1 < len(rs) && strings.ContainsRune("\"\\$`", rs[j+1]) {
					j++
				}
				cur.WriteRune(rs[j])
			}
			if j >= len(rs) {
				return nil, fmt.Errorf("command %q: unterminated double quote at character %d", s, i+1)
			}
			i, inTok = j, true
		default:
			cur.WriteRune(r)
			inTok = true
		}
	}
	if inTok {
		words = append(words, cur.String())
	}
	if len(words) == 0 {
		return nil, errors.New("empty command")
	}
	return words, nil
}
