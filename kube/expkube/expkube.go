// Package expkube is the cluster side of experiments that name
// Kubernetes Services (deployment.kube): it implements
// experiment.KubeServices with kube/inject (the in-cluster fault proxy of
// chaos kube inject) and reaches a gateway's Service through the API
// server's service proxy, with the kubeconfig's credentials.
package expkube

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/vmcp-chaos/vmcp-chaos/experiment"
	"github.com/vmcp-chaos/vmcp-chaos/kube/inject"
)

// Services acts on one cluster's Services for an experiment.
type Services struct {
	cfg   *rest.Config
	cs    *inject.Client
	image string
}

var _ experiment.KubeServices = (*Services)(nil)

// New returns the Services of the cluster cfg reaches; image is the fault
// proxy's image (default inject.DefaultImage).
func New(cfg *rest.Config, image string) (*Services, error) {
	cs, err := inject.NewClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Services{cfg: cfg, cs: cs, image: cmp.Or(image, inject.DefaultImage)}, nil
}

// Gateway is the URL of g through the API server's service proxy
// (/api/v1/namespaces/NS/services/NAME[:PORT]/proxy/PATH) and the
// transport adapter that adds the cluster's TLS configuration and
// credentials to the probes' own transport.
func (s *Services) Gateway(ns string, g experiment.KubeService) (string, func(*http.Transport) http.RoundTripper, error) {
	host, err := url.Parse(s.cfg.Host)
	if err != nil || host.Host == "" {
		return "", nil, fmt.Errorf("kube: API server %q: not a URL", s.cfg.Host)
	}
	id := g.Service
	if g.Port != 0 {
		id += ":" + strconv.Itoa(g.Port)
	}
	u := strings.TrimRight(host.String(), "/") + "/api/v1/namespaces/" + ns + "/services/" + id + "/proxy" + g.Path
	tlsCfg, err := rest.TLSConfigFor(s.cfg)
	if err != nil {
		return "", nil, fmt.Errorf("kube: %w", err)
	}
	// The wrappers are made once here, so that a bad configuration is an
	// error now and not at the first probe.
	if _, err := rest.HTTPWrappersForConfig(s.cfg, http.DefaultTransport); err != nil {
		return "", nil, fmt.Errorf("kube: %w", err)
	}
	wrap := func(base *http.Transport) http.RoundTripper {
		base.TLSClientConfig = tlsCfg
		rt, err := rest.HTTPWrappersForConfig(s.cfg, base)
		if err != nil {
			return base // checked above
		}
		return rt
	}
	return u, wrap, nil
}

// Check fails unless ns/svc exists and can be injected.
func (s *Services) Check(ctx context.Context, ns, svc string) error {
	return inject.Check(ctx, s.cs, ns, svc)
}

// Inject puts the fault proxy with faults in front of ns/svc, as chaos
// kube inject does.
func (s *Services) Inject(ctx context.Context, ns, svc string, faults []byte, lease time.Duration) error {
	host, _ := os.Hostname()
	_, err := inject.Inject(ctx, s.cs, inject.Spec{Namespace: ns, Service: svc, Faults: faults, Image: s.image,
		LeaseDuration: lease, Holder: fmt.Sprintf("chaos-experiment@%s/%d", host, os.Getpid())})
	return err
}

// Hold renews the injection's Lease until ctx ends.
func (s *Services) Hold(ctx context.Context, ns, svc string, lease time.Duration) error {
	n, err := inject.NamesFor(svc)
	if err != nil {
		return err
	}
	return inject.KeepAlive(ctx, s.cs, ns, n, lease)
}

// Heal takes the proxy out of ns/svc, as chaos kube heal does.
func (s *Services) Heal(ctx context.Context, ns, svc string) error {
	return inject.Restore(ctx, s.cs, ns, svc, true)
}

// Injected reports whether anything of an injection of ns/svc is left.
func (s *Services) Injected(ctx context.Context, ns, svc string) (bool, error) {
	return inject.Injected(ctx, s.cs, ns, svc)
}
