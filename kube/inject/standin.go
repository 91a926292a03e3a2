package inject

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vmcp-chaos/vmcp-chaos/proxy"
)

// ProxyConfig is what an injection's proxy reads from the anchor.
type ProxyConfig struct {
	Names
	Namespace string
	// Upstream is the shadow Service's URL; Listen the MCP address.
	Upstream, Listen string
	// Faults are set on the proxy at start.
	Faults []byte
	// LeaseDuration is how long the Lease may go unrenewed.
	LeaseDuration time.Duration
}

// LoadProxyConfig reads the configuration of the injection of service in
// ns from its anchor.
func LoadProxyConfig(ctx context.Context, cs *Client, ns, service string) (ProxyConfig, error) {
	n, err := NamesFor(service)
	if err != nil {
		return ProxyConfig{}, err
	}
	cm, err := cs.ConfigMaps(ns).Get(ctx, n.Injection, metav1.GetOptions{})
	if err != nil {
		return ProxyConfig{}, fmt.Errorf("kube proxy: the injection's ConfigMap: %w", err)
	}
	cfg := ProxyConfig{Names: n, Namespace: ns, Upstream: cm.Data[keyUpstream], Listen: cm.Data[keyListen], Faults: []byte(cm.Data[keyFaults])}
	if cfg.LeaseDuration, err = time.ParseDuration(cm.Data[keyLease]); err != nil || cfg.LeaseDuration <= 0 {
		return ProxyConfig{}, fmt.Errorf("kube proxy: ConfigMap %s/%s key %s: %q is not a positive duration", ns, n.Injection, keyLease, cm.Data[keyLease])
	}
	if cfg.Upstream == "" || cfg.Listen == "" {
		return ProxyConfig{}, fmt.Errorf("kube proxy: ConfigMap %s/%s: %s or %s is empty", ns, n.Injection, keyUpstream, keyListen)
	}
	return cfg, nil
}

// faultsTTL is how long the proxy's own fault lease runs: the injection's
// Lease, not the proxy's, is the dead-man switch here.
const faultsTTL = 24 * time.Hour

// Serve runs the proxy of cfg with its faults until the injection's Lease
// expires or is deleted, then restores the Service and deletes the
// injection's objects (Restore, its permissions excepted) and returns
// nil; or until ctx ends (ctx's error: the pod is stopped, e.g. by heal).
// started, if not nil, is called once the proxy serves.
func Serve(ctx context.Context, cs *Client, cfg ProxyConfig, logger *slog.Logger, started func(*proxy.Proxy)) error {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p, err := proxy.New(proxy.Options{Upstream: cfg.Upstream, Listen: cfg.Listen, StandIn: true,
		MaxLeaseTTL: faultsTTL, Logger: logger})
	if err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	err = p.Start(startCtx)
	cancel()
	if err != nil {
		return err
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = p.Close(closeCtx)
	}()
	if err := p.SetFaults(cfg.Faults, faultsTTL); err != nil {
		return fmt.Errorf("kube proxy: faults: %w", err)
	}
	if started != nil {
		started(p)
	}
	poll := min(max(cfg.LeaseDuration/4, 200*time.Millisecond), 2*time.Second)
	if err := WaitExpired(ctx, cs, cfg.Namespace, cfg.Names, poll); err != nil {
		return err
	}
	logger.Info("the injection's Lease expired: restoring the Service", "namespace", cfg.Namespace, "service", cfg.Service)
	// Restore until it succeeds or ctx ends: nothing else will.
	for {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := Restore(rctx, cs, cfg.Namespace, cfg.Service, false)
		cancel()
		if err == nil || ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
		logger.Error("restore failed, trying again", "err", err)
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}
