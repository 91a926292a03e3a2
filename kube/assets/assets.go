// Package assets builds the binaries of the tests' Kubernetes control
// plane, kube-apiserver and etcd, from the Go module proxy into the user's
// cache, once per machine and version (see kube/README.md). It is apart
// from kube/controlplane, which starts them, so that the build command
// (kube/cmd/kube-assets) links small.
package assets

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/vmcp-chaos/vmcp-chaos/internal/hostslot"
)

// The binaries of a control plane, as envtest names them in its assets
// directory (KUBEBUILDER_ASSETS).
const (
	APIServerBin = "kube-apiserver"
	EtcdBin      = "etcd"
)

// builders are the nested builder modules (under kube/build of the source
// tree) and the package each builds: k8s.io/kubernetes and etcd stay out
// of the main module's go.mod.
var builders = []struct{ dir, pkg, bin string }{
	{"kube/build/apiserver", "k8s.io/kubernetes/cmd/kube-apiserver", APIServerBin},
	{"kube/build/etcd", "go.etcd.io/etcd/server/v3", EtcdBin},
}

// BuildTimeout bounds a cold build of both binaries (24.5 CPU-minutes
// measured: about 13 minutes on an idle 2-core machine, 70 under a load
// average of 20; see kube/README.md).
const BuildTimeout = 40 * time.Minute

// Root is where built control planes are kept: one directory per
// version of the builder modules, under the user's cache directory (the
// system's temporary directory without one). Like Go's build cache it
// outlives the processes that fill it; removing it costs one cold build.
func Root() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "vmcp-chaos", "kube-bin")
}

// Dir is the directory that holds, or will hold, the binaries built
// from the builder modules of the source tree root: named after the
// content of their go.mod and go.sum files (and the platform), so a
// version bump builds anew and every tree on the same versions shares one
// build.
func Dir(root string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "%s/%s\n", runtime.GOOS, runtime.GOARCH)
	for _, b := range builders {
		for _, f := range []string{"go.mod", "go.sum"} {
			data, err := os.ReadFile(filepath.Join(root, b.dir, f))
			if err != nil {
				return "", fmt.Errorf("kube assets: builder module: %w", err)
			}
			fmt.Fprintf(h, "%s/%s %d\n", b.dir, f, len(data))
			h.Write(data)
		}
	}
	return filepath.Join(Root(), hex.EncodeToString(h.Sum(nil)[:6])), nil
}

// Built reports whether dir holds both binaries.
func Built(dir string) bool {
	for _, b := range builders {
		if fi, err := os.Stat(filepath.Join(dir, b.bin)); err != nil || !fi.Mode().IsRegular() {
			return false
		}
	}
	return true
}

// Build returns the directory holding kube-apiserver and etcd built
// from the builder modules of the source tree root, building them first
// when they are not there yet (progress, the go commands and their output,
// goes to log). One build runs at a time on the host (a host slot); a
// process that waited for another's build finds it done. Builds run at the
// lowest CPU priority (nice) and land in a temporary directory renamed
// into place whole, so a build killed halfway leaves nothing under the
// final name. ctx bounds it (default BuildTimeout).
func Build(ctx context.Context, root string, log io.Writer) (string, error) {
	dir, err := Dir(root)
	if err != nil {
		return "", err
	}
	if Built(dir) {
		return dir, nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, BuildTimeout)
		defer cancel()
	}
	release, err := hostslot.Acquire(ctx, "kube-build", 1)
	if err != nil {
		return "", fmt.Errorf("kube assets: wait for another build: %w", err)
	}
	defer release()
	if Built(dir) {
		return dir, nil
	}
	if err := os.MkdirAll(Root(), 0o755); err != nil {
		return "", fmt.Errorf("kube assets: %w", err)
	}
	// Leftovers of builds killed halfway (only one builder runs at a time:
	// this one holds the slot).
	if old, _ := filepath.Glob(filepath.Join(Root(), "*.building-*")); len(old) > 0 {
		for _, o := range old {
			_ = os.RemoveAll(o)
		}
	}
	tmp, err := os.MkdirTemp(Root(), filepath.Base(dir)+".building-")
	if err != nil {
		return "", fmt.Errorf("kube assets: %w", err)
	}
	defer os.RemoveAll(tmp) // gone once renamed
	for _, b := range builders {
		if err := goBuild(ctx, filepath.Join(root, b.dir), b.pkg, filepath.Join(tmp, b.bin), log); err != nil {
			return "", err
		}
	}
	if err := os.Rename(tmp, dir); err != nil && !(errors.Is(err, fs.ErrExist) && Built(dir)) {
		return "", fmt.Errorf("kube assets: install %s: %w", dir, err)
	}
	return dir, nil
}

// goBuild builds pkg of the module in modDir into out, static and at the
// lowest CPU priority when nice is installed.
func goBuild(ctx context.Context, modDir, pkg, out string, log io.Writer) error {
	args := []string{"go", "build", "-o", out, pkg}
	if nice, err := exec.LookPath("nice"); err == nil {
		args = append([]string{nice, "-n", "19"}, args...)
	}
	start := time.Now()
	fmt.Fprintf(log, "kube assets: building %s (cd %s && %v)\n", pkg, modDir, args)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = modDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=readonly -buildvcs=false", "GOWORK=off")
	cmd.Stdout, cmd.Stderr = log, log
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kube assets: go build %s in %s: %w", pkg, modDir, errors.Join(err, context.Cause(ctx)))
	}
	fmt.Fprintf(log, "kube assets: built %s in %s\n", pkg, time.Since(start).Round(time.Second))
	return nil
}
