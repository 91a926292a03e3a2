package targets

import (
	"cmp"
	"fmt"
)

// ProfileEnv is the path of a target profile for the Ginkgo suite
// (TargetConfig.Profile, `chaos run --profile`): the exec gateway it
// describes is the target; the other VMCP_CHAOS_* variables override its
// fields.
const ProfileEnv = "VMCP_CHAOS_PROFILE"

// profileTarget builds the exec target of c.Profile, with c's exec fields
// (the flags and VMCP_CHAOS_* variables) overriding the profile's.
func (c TargetConfig) profileTarget(chaosBinary func() (string, error)) (Target, error) {
	if c.Kind != "" && c.Kind != "exec" {
		return nil, fmt.Errorf("--profile ($%s) describes an exec gateway: it does not go with --target %s ($%s)", ProfileEnv, c.Kind, TargetEnv)
	}
	p, err := LoadProfile(c.Profile)
	if err != nil {
		return nil, err
	}
	if c.GatewayCmd != "" {
		argv, err := SplitCommand(c.GatewayCmd)
		if err != nil {
			return nil, fmt.Errorf("--gateway-cmd ($%s): %w", GatewayCmdEnv, err)
		}
		p.Command = argv
	}
	e, err := p.Exec(chaosBinary)
	if err != nil {
		return nil, err
	}
	if c.ConfigTemplate != "" {
		text, err := readConfigTemplateFlag(c.ConfigTemplate)
		if err != nil {
			return nil, err
		}
		e.ConfigTemplate = text
	}
	e.ReadyURL = cmp.Or(c.ReadyURL, e.ReadyURL)
	e.MCPPath = cmp.Or(c.MCPPath, e.MCPPath)
	e.Image = cmp.Or(c.Image, e.Image)
	if c.ToolNamePattern != "" {
		e.ToolNames = c.ToolNamePattern
	}
	caps, err := c.checkCapsAndNames()
	if err != nil {
		return nil, err
	}
	if c.CapabilitiesSet {
		e.Caps = caps
	}
	return e, nil
}
