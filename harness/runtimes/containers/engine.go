// Package containers is the container runtime of the harness: fake
// backends and the gateway under test run as Docker containers on a
// private network per topology, reached by alias, so faults only containers
// give can be injected (SIGKILL, a freeze with the TCP state kept, a
// graceful stop and start, a network partition, a new address, a restart
// of the gateway itself). Images are built locally once per run FROM
// scratch from a static chaos binary, never pulled. Every container,
// network and image is labelled with the run's id and owner; resources of
// dead owners are swept at start, and SIGINT/SIGTERM remove the run's own
// (Ryuk is not used). See README.md.
package containers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"
	"github.com/testcontainers/testcontainers-go"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// Environment variables.
const (
	// RequireDockerEnv set to 1 turns "no Docker engine" from a skip into a
	// failure (CI sets it).
	RequireDockerEnv = "VMCP_CHAOS_REQUIRE_DOCKER"
	// RuntimeEnv is the suite's equivalent of `chaos run --runtime`:
	// "container" runs the backends of every scenario in containers.
	RuntimeEnv = "VMCP_CHAOS_RUNTIME"
	// VerboseEnv, when set, keeps testcontainers' own log lines.
	VerboseEnv = "VMCP_CHAOS_CONTAINERS_VERBOSE"
)

// ProbeTimeout bounds the engine probe made before anything else.
const ProbeTimeout = 5 * time.Second

// StartTimeout bounds starting one container until it serves (a caller's
// earlier deadline wins): measured 1–2 s idle, over 30 s on a 2-core
// machine at load 25.
const StartTimeout = 90 * time.Second

// Engine is one run's connection to the Docker engine: its id, the image
// built for it and the resources it owns. Get returns the process's one
// Engine.
type Engine struct {
	cli   *testcontainers.DockerClient
	runID string
	token string // the backends' control API token
	// mcpToken is the backends' MCP listener token, given to a gateway
	// whose config this package writes (backendauth.go).
	mcpToken string

	imgMu  sync.Mutex
	image  string
	imgErr error

	netSeq atomic.Int64
	swept  []string // what the sweep at connection removed
}

var engine struct {
	sync.Mutex
	e   *Engine
	err error
	did bool
}

// Get returns the process's Engine, connecting on first use: it sets the
// testcontainers defaults this machine needs (Ryuk off, host 127.0.0.1),
// probes the engine with its own deadline (ProbeTimeout, also when the
// socket accepts and never answers), sweeps what dead owners left and
// installs the SIGINT/SIGTERM cleanup. Without an engine the error wraps
// *runtimes.SkipError unless VMCP_CHAOS_REQUIRE_DOCKER=1. The first result
// is kept.
func Get(ctx context.Context) (*Engine, error) {
	engine.Lock()
	defer engine.Unlock()
	if !engine.did {
		engine.did = true
		engine.e, engine.err = connect(ctx)
	}
	return engine.e, engine.err
}

func connect(ctx context.Context) (*Engine, error) {
	setDefaultEnv()
	if os.Getenv(VerboseEnv) == "" {
		tclog.SetDefault(tclog.NewNoopLogger()) // one line per container step otherwise
	}
	cli, err := probe(ctx, ProbeTimeout, os.Getenv(DockerHostEnv))
	var conflict *hostConflictError
	if errors.As(err, &conflict) {
		return nil, fmt.Errorf("containers: %w", err)
	}
	if err != nil {
		reason := fmt.Sprintf("no usable Docker engine: %v", err)
		if os.Getenv(RequireDockerEnv) == "1" {
			return nil, fmt.Errorf("containers: %w", &runtimes.RequiredError{Reason: reason, Env: RequireDockerEnv})
		}
		return nil, fmt.Errorf("containers: %w", &runtimes.SkipError{Reason: reason})
	}
	e := &Engine{cli: cli, runID: randomHex(6), token: randomHex(16), mcpToken: randomHex(16)}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	swept, err := e.SweepDead(sctx)
	e.swept = swept
	if err != nil {
		fmt.Fprintf(os.Stderr, "containers: sweep of dead owners' resources: %v\n", err)
	}
	installSignalCleanup(e)
	return e, nil
}

// setDefaultEnv sets what testcontainers needs on these machines, unless
// the user set it: no Ryuk (no registry to pull it from; exactly "true"),
// and the host is 127.0.0.1 (/.dockerenv makes it guess the gateway).
func setDefaultEnv() {
	if _, ok := os.LookupEnv("TESTCONTAINERS_RYUK_DISABLED"); !ok {
		_ = os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	if _, ok := os.LookupEnv("TESTCONTAINERS_HOST_OVERRIDE"); !ok {
		_ = os.Setenv("TESTCONTAINERS_HOST_OVERRIDE", "127.0.0.1")
	}
}

// DockerHostEnv names the engine to use. When set, the probe checks that
// engine and no other: if it does not answer there is no engine (no
// silent fallback to /var/run/docker.sock, which testcontainers makes),
// and testcontainers must resolve the same one.
const DockerHostEnv = "DOCKER_HOST"

// probe connects and pings within d, whatever the client does with its
// own contexts: a socket that accepts and never answers is given up on.
// host is the engine the run must use ($DOCKER_HOST; "" lets
// testcontainers discover one): it is pinged with a plain client first,
// before testcontainers resolves (and caches) its own choice, which then
// must be host.
func probe(ctx context.Context, d time.Duration, host string) (*testcontainers.DockerClient, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	type res struct {
		cli *testcontainers.DockerClient
		err error
	}
	ch := make(chan res, 1)
	go func() {
		cli, err := dial(ctx, host)
		ch <- res{cli, err}
	}()
	where := "the engine"
	if host != "" {
		where = fmt.Sprintf("the engine at %s=%s", DockerHostEnv, host)
	}
	select {
	case r := <-ch:
		if r.err != nil && ctx.Err() != nil {
			return nil, fmt.Errorf("%s did not answer a ping within %s", where, d)
		}
		return r.cli, r.err
	case <-time.After(d + 100*time.Millisecond):
		go func() { // close what a late answer brings
			if r := <-ch; r.cli != nil {
				_ = r.cli.Close()
			}
		}()
		return nil, fmt.Errorf("%s did not answer a ping within %s", where, d)
	}
}

// dial is probe's body, bounded by ctx.
func dial(ctx context.Context, host string) (*testcontainers.DockerClient, error) {
	if host != "" {
		plain, err := client.New(client.FromEnv, client.WithHost(host))
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", DockerHostEnv, host, err)
		}
		_, err = plain.Ping(ctx, client.PingOptions{})
		_ = plain.Close()
		if err != nil {
			return nil, fmt.Errorf("%s=%s: %w", DockerHostEnv, host, err)
		}
	}
	cli, err := testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		_, err = cli.Ping(ctx, client.PingOptions{})
	}
	if err == nil && host != "" && cli.DaemonHost() != host {
		err = &hostConflictError{want: host, got: cli.DaemonHost()}
	}
	if err != nil {
		if cli != nil {
			_ = cli.Close()
		}
		return nil, err
	}
	return cli, nil
}

// hostConflictError: testcontainers resolved another engine than
// $DOCKER_HOST (e.g. tc.host in ~/.testcontainers.properties). A
// configuration error, never a skip.
type hostConflictError struct{ want, got string }

func (e *hostConflictError) Error() string {
	return fmt.Sprintf("testcontainers resolved the engine %s, not %s=%s (tc.host in ~/.testcontainers.properties?)", e.got, DockerHostEnv, e.want)
}

// RunID is this run's id (the value of the LabelRun label).
func (e *Engine) RunID() string { return e.runID }

// Client is the Docker client.
func (e *Engine) Client() *testcontainers.DockerClient { return e.cli }

// Shutdown removes every resource of this run (containers, networks, the
// image) and the static binary it built. Bounded by ctx (default 30 s).
func (e *Engine) Shutdown(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	err := e.RemoveRun(ctx, e.runID)
	e.imgMu.Lock()
	e.image, e.imgErr = "", nil
	e.imgMu.Unlock()
	return err
}

// Current returns the process's Engine if Get made one, else nil (it
// never connects).
func Current() *Engine {
	engine.Lock()
	defer engine.Unlock()
	return engine.e
}

// ShutdownDefault shuts the process's Engine down if Get made one (for
// TestMain and chaos run).
func ShutdownDefault(ctx context.Context) error {
	if e := Current(); e != nil {
		return e.Shutdown(ctx)
	}
	return nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// IsSkip reports whether err says the environment lacks Docker (skip).
func IsSkip(err error) bool {
	var s *runtimes.SkipError
	return errors.As(err, &s)
}
