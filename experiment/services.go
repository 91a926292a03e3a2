package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// KubeServices acts on the Services an experiment names in
// deployment.kube (kube/expkube implements it over the API server). Run
// needs one in Options.Services when the gateway or a backend is named
// by its Service.
type KubeServices interface {
	// Gateway is the URL of the gateway's MCP endpoint through the API
	// server's service proxy, and the transport adapter that carries the
	// cluster's TLS configuration and credentials.
	Gateway(ns string, g KubeService) (url string, wrap func(*http.Transport) http.RoundTripper, err error)
	// Check fails unless ns/svc exists and the fault proxy can stand in
	// for it (not injected already).
	Check(ctx context.Context, ns, svc string) error
	// Inject puts the fault proxy in front of ns/svc in the cluster with
	// faults (a JSON list), under a Lease of lease (whole seconds).
	Inject(ctx context.Context, ns, svc string, faults []byte, lease time.Duration) error
	// Hold renews the injection's Lease until ctx ends (then nil); it
	// returns an error when the injection is lost.
	Hold(ctx context.Context, ns, svc string, lease time.Duration) error
	// Heal takes the proxy out of ns/svc (the Service as it was, the
	// injection's objects deleted); a Service not injected is left alone.
	Heal(ctx context.Context, ns, svc string) error
	// Injected reports whether ns/svc is injected (the rollback's
	// verification).
	Injected(ctx context.Context, ns, svc string) (bool, error)
}

// kubeLease is the Lease duration of a Service injection: the run's
// lease TTL rounded up to whole seconds, at least 2 s.
func (r *runner) kubeLease() time.Duration {
	secs := (r.e.Safeguards.LeaseTTL + time.Second - 1) / time.Second
	return max(2*time.Second, secs*time.Second)
}

// kubeBackend returns the Service of a backend named by its Service.
func (r *runner) kubeBackend(name string) (svc string, ok bool) {
	for _, b := range r.e.Deployment.Backends {
		if b.Name == name && b.Service != "" {
			return b.Service, true
		}
	}
	return "", false
}

// injectService carries out an inject action on a backend named by its
// Service: the fault proxy is put in front of it (a Service injected by
// an earlier step of this run is healed first), and its Lease is renewed
// until the rollback; losing it aborts the run.
func (r *runner) injectService(ctx context.Context, i int, a *Action, svc string) error {
	if r.opts.Services == nil {
		return fmt.Errorf("method[%d]: inject on %s: no cluster to act on (deployment.kube)", i, a.Backend)
	}
	ns := r.e.Deployment.Kube.Namespace
	r.mu.Lock()
	_, held := r.holds[a.Backend]
	r.mu.Unlock()
	if held {
		if err := r.healService(ctx, a.Backend, svc); err != nil {
			return fmt.Errorf("method[%d]: inject on %s: heal the earlier injection first: %w", i, a.Backend, err)
		}
	}
	faults, err := json.Marshal(a.Faults)
	if err != nil {
		return fmt.Errorf("method[%d]: inject on %s: %w", i, a.Backend, err)
	}
	lease := r.kubeLease()
	holdCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r.mu.Lock()
	r.dirty[a.Backend] = true // before the request: a timeout may still have made it
	r.holds[a.Backend] = cancel
	r.mu.Unlock()
	start := time.Now()
	err = r.opts.Services.Inject(ctx, ns, svc, faults, lease)
	r.recordFault(a.Backend, "inject", a.Faults, err, start)
	r.progress("method[%d]: inject %s on %s (the fault proxy in front of Service %s/%s; Lease %s, renewed every %s)%s", i, faultsYAML(a.Faults), a.Backend, ns, svc, lease, lease/3, errSuffix(err))
	if err != nil {
		return fmt.Errorf("method[%d]: inject on %s (Service %s/%s): %w", i, a.Backend, ns, svc, err)
	}
	go func() {
		if err := r.opts.Services.Hold(holdCtx, ns, svc, lease); err != nil && holdCtx.Err() == nil {
			select {
			case r.lost <- fmt.Errorf("the injection in front of %s (Service %s/%s) is lost: %v", a.Backend, ns, svc, err):
			default:
			}
		}
	}()
	if a.Duration > 0 {
		r.mu.Lock()
		r.timers = append(r.timers, time.AfterFunc(a.Duration, func() {
			cctx, cancel := context.WithTimeout(context.Background(), 2*controlTimeout)
			defer cancel()
			err := r.healService(cctx, a.Backend, svc)
			r.progress("method[%d]: duration %s over: heal %s%s", i, a.Duration, a.Backend, errSuffix(err))
		}))
		r.mu.Unlock()
	}
	return nil
}

// healService stops renewing the backend's Lease and takes the proxy out
// of its Service.
func (r *runner) healService(ctx context.Context, name, svc string) error {
	r.mu.Lock()
	if cancel := r.holds[name]; cancel != nil {
		cancel()
	}
	delete(r.holds, name)
	r.mu.Unlock()
	start := time.Now()
	err := r.opts.Services.Heal(ctx, r.e.Deployment.Kube.Namespace, svc)
	r.recordFault(name, "clear", nil, err, start)
	return err
}

// rollbackServices heals every backend named by its Service that this
// run injected (or tried to), and checks each is no longer injected. It returns one loud
// message per Service that could not be verified as it was, with the
// command that heals it by hand.
func (r *runner) rollbackServices() []string {
	var failures []string
	for _, b := range r.e.Deployment.Backends {
		if b.Service == "" || r.opts.Services == nil {
			continue
		}
		r.mu.Lock()
		dirty := r.dirty[b.Name]
		r.mu.Unlock()
		if !dirty {
			continue // never injected by this run: not this run's to heal
		}
		ns := r.e.Deployment.Kube.Namespace
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), 6*controlTimeout)
		err := r.healService(ctx, b.Name, b.Service)
		if err == nil {
			var injected bool
			if injected, err = r.opts.Services.Injected(ctx, ns, b.Service); err == nil && injected {
				err = fmt.Errorf("Service %s/%s is still injected after heal", ns, b.Service)
			}
		}
		cancel()
		r.check(r.errCheck("rollback: "+b.Name+" healed", fmt.Sprintf("Service %s/%s as it was (no fault proxy in front of it)", ns, b.Service), "as it was", err, start))
		if err != nil {
			msg := fmt.Sprintf("ROLLBACK FAILED on %s: %v\n  heal it by hand: chaos kube heal -n %s --service %s\n  (the proxy in the cluster also heals it once its Lease of %s is not renewed)",
				b.Name, err, ns, b.Service, r.kubeLease())
			failures = append(failures, msg)
			r.progress("%s", msg)
		}
	}
	return failures
}
