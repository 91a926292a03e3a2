package history

import (
	"runtime/debug"
	"testing"
)

// TestVersionFrom: the module version and commit come from the build
// information; a build without them (-buildvcs=false, a source tree) says
// devel and unknown rather than failing or printing nothing.
func TestVersionFrom(t *testing.T) {
	for _, tc := range []struct {
		name string
		info *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "devel (commit unknown)"},
		{"source tree, -buildvcs=false", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}}, "devel (commit unknown)"},
		{"go install module@version", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.3"}}, "v1.2.3 (commit unknown)"},
		{"a clean checkout", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261126143000-0123456789ab"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef0123"}, {Key: "vcs.modified", Value: "false"}}},
			"v0.0.0-20261126143000-0123456789ab (commit 0123456789ab)"},
		{"a dirty checkout", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"devel (commit abc-dirty)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := versionFrom(tc.info)
			if got := v.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
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
