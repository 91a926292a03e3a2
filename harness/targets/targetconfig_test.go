package targets

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestSplitCommand(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want []string
	}{
		{`vmcp serve --config {{.ConfigPath}}`, []string{"vmcp", "serve", "--config", "{{.ConfigPath}}"}},
		{`  '/opt/my gw/vmcp'   --flag="a b" x\ y  `, []string{"/opt/my gw/vmcp", "--flag=a b", "x y"}},
		{`sh -c 'echo "$0"' "say \"hi\" \n"`, []string{"sh", "-c", `echo "$0"`, `say "hi" \n`}},
		{`a '' b`, []string{"a", "", "b"}},
	} {
		got, err := SplitCommand(tc.in)
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("SplitCommand(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, bad := range []string{``, `   `, `a 'b`, `a "b`, `a \`} {
		if got, err := SplitCommand(bad); err == nil {
			t.Errorf("SplitCommand(%q) = %q, want an error", bad, got)
		}
	}
}

func TestTargetConfig(t *testing.T) {
	t.Parallel()
	noBin := func() (string, error) { t.Fatal("the chaos binary was asked for"); return "", nil }
	ref, err := TargetConfig{}.Target(noBin)
	if err != nil || ref.Name() != "reference" || !slices.Equal(ref.Capabilities(), DefaultReferenceCapabilities) {
		t.Fatalf("default: %v %v", ref, err)
	}
	none, err := TargetConfig{CapabilitiesSet: true}.Target(noBin)
	if err != nil || none.Capabilities() == nil || len(none.Capabilities()) != 0 {
		t.Fatalf("no capabilities: %v %v", none, err)
	}
	ex, err := TargetConfig{Kind: "exec"}.Target(func() (string, error) { return "/bin/chaos", nil })
	e, _ := ex.(Exec)
	if err != nil || e.Name() != "chaos-vmcp" || e.Command[0] != "/bin/chaos" || e.ConfigTemplate != ChaosVMCPTemplate ||
		e.ReadyURL != "{{.BaseURL}}/status" || !slices.Equal(e.Caps, DefaultReferenceCapabilities) {
		t.Fatalf("exec chaos vmcp: %+v %v", ex, err)
	}
	tmpl := filepath.Join(t.TempDir(), "gw.tmpl")
	if err := os.WriteFile(tmpl, []byte("name: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ex, err = TargetConfig{Kind: "exec", GatewayCmd: `"/opt/my gw/vmcp" serve --config {{.ConfigPath}}`, ConfigTemplate: tmpl}.Target(noBin)
	e, _ = ex.(Exec)
	if err != nil || e.Name() != "vmcp" || e.Command[0] != "/opt/my gw/vmcp" || e.ConfigTemplate != "name: x\n" || e.Caps != nil {
		t.Fatalf("exec other gateway: %+v %v", ex, err)
	}
	for _, tc := range []struct {
		cfg  TargetConfig
		want string
	}{
		{TargetConfig{Kind: "k8s"}, `unknown --target "k8s" (want reference or exec; $VMCP_CHAOS_TARGET)`},
		{TargetConfig{GatewayCmd: "x"}, "need --target exec"},
		{TargetConfig{Kind: "exec", GatewayCmd: "x"}, "needs --config-template"},
		{TargetConfig{Kind: "exec", GatewayCmd: "x 'y", ConfigTemplate: tmpl}, "unterminated single quote"},
		{TargetConfig{Kind: "exec", ConfigTemplate: "/nonexistent.tmpl"}, "/nonexistent.tmpl"},
		{TargetConfig{Capabilities: "telepathy", CapabilitiesSet: true}, `unknown capability "telepathy"`},
	} {
		if _, err := tc.cfg.Target(func() (string, error) { return "/bin/chaos", nil }); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
