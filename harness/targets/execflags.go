package targets

import (
	"fmt"
	"net/url"
	"strings"
	"text/template"
	"unicode"

	"github.com/vmcp-chaos/vmcp-chaos/internal/boundedread"
)

// checkExecFlags checks the exec fields of c (the flags and VMCP_CHAOS_*
// variables) before anything reads or starts: --gateway-image only with
// an exec target, --mcp-path a URL path, --ready-url a template that
// renders to an http(s) URL. Errors name the flag and its variable.
func (c TargetConfig) checkExecFlags() error {
	if c.Image != "" && c.Profile == "" && (c.Kind == "" || c.Kind == "reference") {
		return fmt.Errorf("--gateway-image ($%s) %q: the reference gateway runs in-process; an image needs --target exec or --profile", GatewayImageEnv, c.Image)
	}
	if p := c.MCPPath; p != "" && (!strings.HasPrefix(p, "/") || strings.ContainsFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) })) {
		return fmt.Errorf("--mcp-path ($%s) %q: want a URL path starting with /, without spaces, such as /mcp", MCPPathEnv, p)
	}
	if c.ReadyURL != "" {
		out, err := RenderTemplate("ready-url", c.ReadyURL, sampleData)
		switch {
		case isEnvUnset(err): // {{env "X"}}: known only when the gateway starts
		case err != nil:
			return fmt.Errorf("--ready-url ($%s): %w", ReadyURLEnv, err)
		case !isHTTPURL(out):
			return fmt.Errorf("--ready-url ($%s) %q renders to %q: want an http or https URL, such as {{.BaseURL}}/health", ReadyURLEnv, c.ReadyURL, out)
		}
	}
	return nil
}

// isHTTPURL reports whether s is an http or https URL with a host.
func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// readConfigTemplateFlag reads --config-template (bounded) and checks its
// template syntax.
func readConfigTemplateFlag(path string) (string, error) {
	data, err := boundedread.File(path, boundedread.ConfigTemplate)
	if err != nil {
		return "", fmt.Errorf("--config-template ($%s): %w", ConfigTemplateEnv, err)
	}
	if _, err := template.New(path).Funcs(templateFuncs).Parse(string(data)); err != nil {
		return "", fmt.Errorf("--config-template ($%s): %w", ConfigTemplateEnv, err)
	}
	return string(data), nil
}
