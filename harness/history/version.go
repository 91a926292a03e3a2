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
	// had changes), or "unknown" (built with -buildvcs=false, outside a
	// repository, or by `go test`).
	Commit string
	// Go is the Go version the binary was built with.
	Go string
	// Schema is SchemaVersion.
	Schema int
}

// Version returns this binary's BuildVersion, from its embedded build
// information (runtime/debug.ReadBuildInfo).
func Version() BuildVersion {
	info, _ := debug.ReadBuildInfo()
	return versionFrom(info)
}

// versionFrom reads a BuildVersion from build information (nil allowed).
func versionFrom(info *debug.BuildInfo) BuildVersion {
	v := BuildVersion{Module: "devel", Commit: "unknown", Go: runtime.Version(), Schema: SchemaVersion}
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
	if rev != "" {
		v.Commit = rev[:min(12, len(rev))]
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
	return fmt.Sprintf("version: %s\ncommit: %s\ngo: %s\nresults schema: %d\n", v.Module, v.Commit, v.Go, v.Schema)
}
