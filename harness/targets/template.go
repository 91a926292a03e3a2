package targets

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"text/template"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// ChaosVMCPTemplate is the shipped configuration template for our own
// `chaos vmcp --config` (templates/chaos-vmcp.yaml.tmpl).
//
//go:embed templates/chaos-vmcp.yaml.tmpl
var ChaosVMCPTemplate string

// TemplateData is what an Exec target's config template, argv templates and
// ready URL template are executed with.
type TemplateData struct {
	// Backends are the topology's backends, in order.
	Backends []runtimes.BackendInfo
	// Host is the gateway's listen host, always 127.0.0.1.
	Host string
	// Port is a free TCP port picked for the gateway.
	Port int
	// Listen is Host:Port.
	Listen string
	// BaseURL is http://Listen.
	BaseURL string
	// ConfigPath is the path of the rendered config file.
	ConfigPath string
	// Dir is a temporary directory for the gateway's files.
	Dir string
	// ProfileDir is the absolute folder of the target profile ("" for a
	// target without one): a wrapper script or file beside the profile
	// is {{.ProfileDir}}/wrapper.sh.
	ProfileDir string
	// CallTimeout is the per-call backend timeout the topology asks the
	// gateway for, as a Go duration string ("5s").
	CallTimeout string
	// Features are the optional gateway features the topology asks for
	// (health, breaker, metrics, optimizer; keepalive is per backend, in
	// .Backends[i].Keepalive).
	Features runtimes.Features
}

// templateFuncs are available in every template:
//
//	json   JSON encoding of any value (a valid YAML flow value), e.g. {{json .Command}}
//	quote  a string as a double-quoted JSON/YAML string
//	join   strings.Join
//	lower, upper
//	env    an environment variable, e.g. {{env "MY_GATEWAY_BIN"}} (unset is an error)
var templateFuncs = template.FuncMap{
	"json": func(v any) (string, error) {
		b, err := json.Marshal(v)
		return string(b), err
	},
	"quote": func(s string) string {
		b, _ := json.Marshal(s)
		return string(b)
	},
	"join":  strings.Join,
	"env":   lookupEnv,
	"lower": strings.ToLower,
	"upper": strings.ToUpper,
}

// RenderTemplate executes a text/template (with the json, quote, join,
// lower and upper functions; a missing key is an error) with data.
func RenderTemplate(name, text string, data any) (string, error) {
	t, err := template.New(name).Funcs(templateFuncs).Option("missingkey=error").Parse(text)
	if err != nil {
		return "", fmt.Errorf("template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return "", fmt.Errorf("template %s: %w", name, err)
	}
	return buf.String(), nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// envUnsetError is the error of {{env "X"}} for an unset X.
type envUnsetError struct{ name string }

func (e *envUnsetError) Error() string { return "environment variable " + e.name + " is not set" }

func lookupEnv(name string) (string, error) {
	v, ok := os.LookupEnv(name)
	if !ok {
		return "", &envUnsetError{name}
	}
	return v, nil
}

// isEnvUnset reports whether err comes from {{env "X"}} with X unset (a
// profile is checked before its variables need to be set).
func isEnvUnset(err error) bool {
	var e *envUnsetError
	return errors.As(err, &e)
}
