package containers

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/moby/moby/client/pkg/jsonmessage"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// ImageRepo is the repository of the images a run builds; the tag is the
// chaos binary's content hash and the run id.
const ImageRepo = "vmcp-chaos/chaos"

// imageChanges are what the image gets beside its one file, as the
// Dockerfile instructions docker import applies: the entrypoint and the
// run's labels (by which the run's cleanup finds and removes it).
func imageChanges(labels map[string]string) []string {
	var b strings.Builder
	b.WriteString("LABEL")
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, " %s=%s", k, strconv.Quote(labels[k]))
	}
	return []string{`ENTRYPOINT ["/chaos"]`, b.String()}
}

// Image returns the run's chaos image, making it on first use: a static
// (CGO_ENABLED=0) chaos binary — $CHAOS_BIN or the running chaos command
// when static, else built with `go build` from the source tree (see
// staticChaos) — imported as the one file of an image with no base (what
// FROM scratch and one COPY make, without the builder's intermediate
// images: 0.4 s instead of 1.9 s here), tagged
// vmcp-chaos/chaos:<sha256 of the binary>-<run id> and labelled with the
// run (imageChanges). Later calls return the first result, a failure
// too. ctx bounds the making (default 3 minutes).
func (e *Engine) Image(ctx context.Context) (string, error) {
	e.imgMu.Lock()
	defer e.imgMu.Unlock()
	if e.image != "" || e.imgErr != nil {
		return e.image, e.imgErr
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	defer cancel()
	e.image, e.imgErr = e.build(ctx)
	return e.image, e.imgErr
}

func (e *Engine) build(ctx context.Context) (string, error) {
	bin, err := e.staticChaos(ctx)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("containers: read %s: %w", bin, err)
	}
	sum := sha256.Sum256(data)
	tag := fmt.Sprintf("%s:%s-%s", ImageRepo, hex.EncodeToString(sum[:])[:12], e.runID)
	return tag, e.importImage(ctx, tag, imageChanges(e.labels()), data)
}

// importImage makes tag from one file, /chaos (the binary bin,
// executable), with changes applied (imageChanges).
func (e *Engine) importImage(ctx context.Context, tag string, changes []string, bin []byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: "chaos", Mode: 0o755, Size: int64(len(bin)), ModTime: time.Unix(0, 0)}); err != nil {
		return err
	}
	if _, err := tw.Write(bin); err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	// Never cancelled mid-flight: the engine goes on importing (and
	// leaves the image) after a cancelled request; finished, the run's
	// cleanup removes it. The import takes a second at most.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	res, err := e.cli.ImageImport(ctx, client.ImageImportSource{Source: &buf, SourceName: "-"}, tag, client.ImageImportOptions{Changes: changes})
	if err != nil {
		return fmt.Errorf("containers: import %s: %w", tag, err)
	}
	defer res.Close()
	// The answer is a stream of JSON messages; an error is one of them.
	var log strings.Builder
	if err := jsonmessage.DisplayStream(res, &log); err != nil {
		return fmt.Errorf("containers: import %s: %w\n%s", tag, err, log.String())
	}
	if _, err := e.cli.ImageInspect(ctx, tag); err != nil {
		return fmt.Errorf("containers: import %s: no image after the import: %w\n%s", tag, err, log.String())
	}
	return nil
}

// staticChaos returns a statically linked chaos binary, in this order:
// $CHAOS_BIN when static; the running chaos command when static (a copy
// installed anywhere needs no source tree and no Go toolchain); else one
// built with CGO_ENABLED=0 from the vmcp-chaos source tree the working
// directory is in (runtimes.BuildSharedChaos: once for the host's
// processes that ask for that tree).
// Without any of these the error says how to get one (see noStaticChaos).
func (e *Engine) staticChaos(ctx context.Context) (string, error) {
	env, self := os.Getenv(runtimes.ChaosBinEnv), chaosExecutable()
	for _, p := range []string{env, self} {
		if p != "" && isStatic(p) {
			return p, nil
		}
	}
	root, why := sourceTree()
	if root == "" {
		return "", noStaticChaos(env, self, why)
	}
	bin, err := runtimes.BuildSharedChaos(ctx, root)
	if err != nil {
		return "", fmt.Errorf("containers: %w", err)
	}
	return bin, nil
}

// noStaticChaos is the error when no static chaos binary can be had: the
// reason and the fix, as a *runtimes.SkipError (the container scenarios
// are skipped), or a plain error under VMCP_CHAOS_REQUIRE_DOCKER=1 (they
// fail). env is $CHAOS_BIN, self the running chaos command ("" when this
// process is not chaos, e.g. a test binary), why why no source tree is
// at hand.
func noStaticChaos(env, self, why string) error {
	var reason string
	if self != "" {
		reason = "this chaos binary is dynamically linked: build it with CGO_ENABLED=0, or set " + runtimes.ChaosBinEnv + " to a static build"
	} else {
		reason = "no static chaos binary: set " + runtimes.ChaosBinEnv + " to a CGO_ENABLED=0 build of ./cmd/chaos"
	}
	if env != "" {
		reason += fmt.Sprintf(" ($%s=%s is not a static executable)", runtimes.ChaosBinEnv, env)
	}
	reason += " (" + why + ")"
	if os.Getenv(RequireDockerEnv) == "1" {
		return fmt.Errorf("containers: %w", &runtimes.RequiredError{Reason: reason, Env: RequireDockerEnv})
	}
	return fmt.Errorf("containers: %w", &runtimes.SkipError{Reason: reason})
}

// chaosModule is the module the chaos command is built from.
var chaosModule = strings.TrimSuffix(runtimes.ChaosPackage, "/cmd/chaos")

// sourceTree returns the root of the vmcp-chaos module that holds the
// working directory, when a Go toolchain is on PATH to build it; else ""
// and why not.
func sourceTree() (root, why string) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Sprintf("no working directory: %v", err)
	}
	dir := runtimes.ModuleRoot()
	data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if dir == "" || err != nil || modulePath(data) != chaosModule {
		return "", fmt.Sprintf("%s is not in the %s source tree", wd, chaosModule)
	}
	if _, err := exec.LookPath("go"); err != nil {
		return "", fmt.Sprintf("no Go toolchain on PATH to build one from the source tree %s", dir)
	}
	return dir, ""
}

// modulePath is the module path a go.mod declares ("" if none).
func modulePath(gomod []byte) string {
	for line := range strings.Lines(string(gomod)) {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(line), "module"); ok {
			return strings.Trim(strings.TrimSpace(rest), `"`)
		}
	}
	return ""
}

// chaosExecutable is this process's executable when it is the chaos
// command (chaos run, whatever the file is called), else "" (a test
// binary, which cannot serve as the image's /chaos).
func chaosExecutable() string {
	info, ok := debug.ReadBuildInfo()
	if !ok || info.Path != runtimes.ChaosPackage {
		return ""
	}
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}

// isStatic reports whether the ELF file at path has no interpreter (it
// runs FROM scratch).
func isStatic(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return !slices.ContainsFunc(f.Progs, func(p *elf.Prog) bool { return p.Type == elf.PT_INTERP })
}
