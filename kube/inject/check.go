package inject

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultImage is the proxy's image when none is named.
const DefaultImage = "vmcp-chaos/chaos:latest"

// Check fails unless the Service exists and the proxy can stand in for it
// (as Inject checks it first): a selector, exactly one TCP port with a
// numbered target port, not injected already. Nothing is changed.
func Check(ctx context.Context, cs *Client, ns, service string) error {
	n, err := NamesFor(service)
	if err != nil {
		return err
	}
	svc, err := cs.Services(ns).Get(ctx, service, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("kube inject: %w", err)
	}
	if _, err := checkProxyable(svc, n); err != nil {
		return err
	}
	injected, err := Injected(ctx, cs, ns, service)
	if err != nil {
		return err
	}
	if injected {
		return fmt.Errorf("kube inject: %s/%s: an injection of this Service exists already (ConfigMap %s): heal it first (chaos kube heal)", ns, service, n.Injection)
	}
	return nil
}

// Injected reports whether anything of an injection of service is left
// in ns: the Service switched to the proxy (its annotation), or the
// anchor ConfigMap.
func Injected(ctx context.Context, cs *Client, ns, service string) (bool, error) {
	n, err := NamesFor(service)
	if err != nil {
		return false, err
	}
	svc, err := cs.Services(ns).Get(ctx, service, metav1.GetOptions{})
	switch {
	case err == nil && svc.Annotations[AnnotationInjected] != "":
		return true, nil
	case err != nil && !apierrors.IsNotFound(err):
		return false, fmt.Errorf("kube: %w", err)
	}
	_, err = cs.ConfigMaps(ns).Get(ctx, n.Injection, metav1.GetOptions{})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	}
	return false, fmt.Errorf("kube: %w", err)
}
