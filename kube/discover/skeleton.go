package discover

import (
	"bytes"
	_ "embed"
	"net/url"
	"strconv"
	"text/template"
	"time"
)

//go:embed skeleton.yaml.tmpl
var skeletonText string

var skeletonTmpl = template.Must(template.New("skeleton").Funcs(template.FuncMap{"q": strconv.Quote}).Parse(skeletonText))

// localGateway is the gateway URL a skeleton names when the
// VirtualMCPServer reports none: a port-forward to it on this machine.
const localGateway = "http://127.0.0.1:4483/mcp"

// Skeleton writes an experiment skeleton for v: the gateway, a steady
// state that holds while the gateway lists tools, and the backends with
// their Services and the chaos kube inject command that puts the fault
// proxy in front of each. It parses with experiment.Parse.
func Skeleton(v *VirtualMCP, now time.Time) string {
	gateway := v.URL
	if gateway == "" {
		gateway = localGateway
	}
	var host string
	if u, err := url.Parse(gateway); err == nil && u.Hostname() != "127.0.0.1" && u.Hostname() != "localhost" {
		host = u.Hostname()
	}
	var b bytes.Buffer
	// The template and its data are ours: it cannot fail.
	_ = skeletonTmpl.Execute(&b, struct {
		*VirtualMCP
		Gateway, Host, Now string
		Reported           bool
	}{v, gateway, host, now.UTC().Format(time.RFC3339), v.URL != ""})
	return b.String()
}
