// Package controlplane builds and runs a real Kubernetes control plane
// (kube-apiserver and etcd, no kubelet, no controller manager) for the
// tests of the kube packages: the binaries are built from the Go module
// proxy into the user's cache (kube/assets), and started by
// controller-runtime's envtest on 127.0.0.1 (Start). Pods are accepted but
// never run, and no garbage collector deletes owned objects.
package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/vmcp-chaos/vmcp-chaos/harness/runtimes"
)

// OwnedDirPrefix starts the temporary directory of every control plane
// (certificates, etcd's data, the kubeconfig, the logs):
// "harness-kube-<owner pid>-...", swept with its processes once the owner
// is dead (Sweep).
const OwnedDirPrefix = "harness-kube-"

// Options configure Start.
type Options struct {
	// CRDDirs are directories (or files) of CustomResourceDefinition YAML
	// installed before Start returns.
	CRDDirs []string
}

// Plane is one running control plane.
type Plane struct {
	// Config reaches the API server as a cluster admin (system:masters).
	Config *rest.Config
	// Clientset is a typed client with Config.
	Clientset kubernetes.Interface
	// Kubeconfig is the path of a kubeconfig file with the same identity,
	// for processes (the chaos binary) to use.
	Kubeconfig string
	// Dir is the plane's temporary directory (removed by Stop).
	Dir string

	env      *envtest.Environment
	out      *lockedWriter
	stopOnce sync.Once
	stopErr  error
}

// startTimeout bounds the start of etcd and of kube-apiserver, each (a
// loaded machine starts them in 5-20 s).
const startTimeout = 2 * time.Minute

// Start starts etcd and kube-apiserver from the binaries in assets (see
// kube/assets) and installs opts.CRDDirs. The processes write into a
// directory named for this process, so a run killed before Stop leaves
// processes and a directory that Sweep (called here first) removes.
func Start(assets string, opts Options) (*Plane, error) {
	Sweep()
	dir, err := runtimes.OwnedTempDir(OwnedDirPrefix)
	if err != nil {
		return nil, fmt.Errorf("kube control plane: %w", err)
	}
	out := &lockedWriter{}
	etcd := &envtest.Etcd{DataDir: filepath.Join(dir, "etcd"), Out: out, Err: out}
	// Tests need no durability: fsync only slows a loaded machine down.
	etcd.Configure().Append("unsafe-no-fsync", "true")
	api := &envtest.APIServer{CertDir: filepath.Join(dir, "certs"), Out: out, Err: out}
	for _, d := range []string{etcd.DataDir, api.CertDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			_ = os.RemoveAll(dir)
			return nil, fmt.Errorf("kube control plane: %w", err)
		}
	}
	env := &envtest.Environment{
		BinaryAssetsDirectory:    assets,
		CRDDirectoryPaths:        opts.CRDDirs,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  30 * time.Second,
	}
	env.ControlPlane.Etcd, env.ControlPlane.APIServer = etcd, api
	p := &Plane{Dir: dir, env: env, out: out}
	cfg, err := env.Start()
	if err != nil {
		stopErr := p.Stop()
		return nil, fmt.Errorf("kube control plane: start: %w%s", errors.Join(err, stopErr), p.logTail())
	}
	p.Config = cfg
	p.Kubeconfig = filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(p.Kubeconfig, env.KubeConfig, 0o600); err != nil {
		return nil, errors.Join(fmt.Errorf("kube control plane: %w", err), p.Stop())
	}
	if p.Clientset, err = kubernetes.NewForConfig(cfg); err != nil {
		return nil, errors.Join(fmt.Errorf("kube control plane: %w", err), p.Stop())
	}
	return p, nil
}

// Stop stops kube-apiserver and etcd and removes the plane's directory.
// Safe to call more than once.
func (p *Plane) Stop() error {
	p.stopOnce.Do(func() {
		p.stopErr = p.env.Stop()
		if err := os.RemoveAll(p.Dir); err != nil {
			p.stopErr = errors.Join(p.stopErr, err)
		}
	})
	return p.stopErr
}

// Log is what etcd and kube-apiserver wrote so far.
func (p *Plane) Log() string { return p.out.String() }

// logTail is the end of the processes' output, for an error.
func (p *Plane) logTail() string {
	s := p.out.String()
	if len(s) > 4000 {
		s = "..." + s[len(s)-4000:]
	}
	if s == "" {
		return ""
	}
	return "\n--- etcd and kube-apiserver output (end):\n" + s
}

// lockedWriter is the processes' shared output: both write to it from
// their own copying goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  bytes.Buffer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

func (l *lockedWriter) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.String()
}

// UserConfig reaches the API server as the user name (a client
// certificate), member of groups: with no group it may do only what RBAC
// objects grant it.
func (p *Plane) UserConfig(name string, groups ...string) (*rest.Config, error) {
	u, err := p.env.AddUser(envtest.User{Name: name, Groups: groups}, nil)
	if err != nil {
		return nil, fmt.Errorf("kube control plane: user %s: %w", name, err)
	}
	return u.Config(), nil
}
