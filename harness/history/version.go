package history

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// BuildVersion says which harness judged a run: the module version and
// VCS commit the chaos binary was built from, its Go version and the
// results schema it writes.
type BuildVersion struct {
	// Module is the main module's version ("v1.2.3", a pseudo-version),
	// or "devel" for a build from a source tree without a version.
	Module string
	// Commit is the VCS revision (12 hex digits, "-dirty" when the tree
	// had changes), else the commit stamped by the build (.ci/stamp), or
	// "unknown" (built with -buildvcs=false and no stamp, outside a
	// repository, or by `go test`).
	Commit string
	// Why says why Commit is unknown, from the build's settings ("" when
	// it is known).
	Why string
	// Go is the Go version the binary was built with.
	Go string
	// Schema is SchemaVersion.
	Schema int
}

// stampedCommit is the commit a build stamped into the binary with
// -ldflags "-X github.com/vmcp-chaos/vmcp-chaos/harness/history.stampedCommit=..."
// (.ci/stamp; .ci/run and `task install` use it): the commit of a build
// made with -buildvcs=false, which carries no VCS information.
var stampedCommit string

// noCommitWhy is BuildVersion.Why of a build without a commit.
const noCommitWhy = "the build carries no VCS information (-buildvcs=false, a build outside a git checkout, or go test) " +
	"and no commit stamp (build with -ldflags \"$(.ci/stamp)\", as .ci/run and task install do)"

// Version returns this binary's BuildVersion, from its embedded build
// information (runtime/debug.ReadBuildInfo).
func Version() BuildVersion {
	info, _ := debug.ReadBuildInfo()
	return versionFrom(info, stampedCommit)
}

// versionFrom reads a BuildVersion from build information (nil allowed)
// and the commit the build stamped ("": none).
func versionFrom(info *debug.BuildInfo, stamped string) BuildVersion {
	v := BuildVersion{Module: "devel", Commit: "unknown", Why: noCommitWhy, Go: runtime.Version(), Schema: SchemaVersion}
	if stamped != "" {
		v.Commit, v.Why = stamped, ""
	}
	if info == nil {
		return v
	}
	if info.GoVersion != "" {
		v.Go = info.GoVersion
	}
	if m := info.Main.Version; m != "" && m != "(devel)" {
		v.Module = m
	}
	var rev string
	var dirty bool
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	// (The build settings do not record -buildvcs=false: such a build
	// looks like one outside a checkout.)
	if rev != "" {
		v.Commit, v.Why = rev[:min(12, len(rev))], ""
		if dirty {
			v.Commit += "-dirty"
		}
	}
	return v
}

// String is the one-line form results, journals and bench files carry
// (Results.HarnessVersion): "v1.2.3 (commit 0123456789ab)", "devel
// (commit unknown)".
func (v BuildVersion) String() string {
	return fmt.Sprintf("%s (commit %s)", v.Module, v.Commit)
}

// Long is what `chaos version` prints: one "key: value" line each.
func (v BuildVersion) Long() string {
	s := fmt.Sprintf("version: %s\ncommit: %s\ngo: %s\nresults schema: %d\n", v.Module, v.Commit, v.Go, v.Schema)
	if v.Why != "" {
		s += "commit unknown: " + v.Why + "\n"
	}
	return s
}
