package history

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionFrom: the module version and commit come from the build
// information; a build without them (-buildvcs=false, a source tree) says
// devel and unknown rather than failing or printing nothing.
func TestVersionFrom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		info    *debug.BuildInfo
		stamped string
		want    string
	}{
		{"no build info", nil, "", "devel (commit unknown)"},
		{"source tree, -buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "", "devel (commit unknown)"},
		{"-buildvcs=false, stamped by .ci/stamp", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "0123456789ab-dirty", "devel (commit 0123456789ab-dirty)"},
		{"go install module@version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "", "v1.2.3 (commit unknown)"},
		{"a clean checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126143000-0123456789ab"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}},
			"", "v0.0.0-20261126143000-0123456789ab (commit 0123456789ab)"},
		{"a dirty checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"", "devel (commit abc-dirty)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := versionFrom(tc.info, tc.stamped)
			if got := v.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
			if unknown := strings.Contains(tc.want, "commit unknown"); unknown != strings.Contains(v.Long(), "commit unknown: the build carries no VCS information") {
				t.Errorf("Long() = %q: the reason for an unknown commit only when it is unknown", v.Long())
			}
			if v.Go == "" || v.Schema != SchemaVersion {
				t.Errorf("go %q, schema %d", v.Go, v.Schema)
			}
			if tc.info != nil && tc.info.GoVersion != "" && v.Go != tc.info.GoVersion {
				t.Errorf("go %q, want %q", v.Go, tc.info.GoVersion)
			}
		})
	}
}
