package inject

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Restore takes the injection of service in ns out: the Service gets back
// its saved selector and annotations (when it still carries the
// injection's annotation), then the shadow Service, the proxy's
// Deployment and the Lease are deleted, with the ServiceAccount, Role and
// RoleBinding when withRBAC (the proxy cannot delete its own identity and
// permissions and go on: it leaves them to the garbage collector), and the
// anchor last. What is gone already is skipped, so Restore may be repeated; it
// goes on after an error and returns them all.
func Restore(ctx context.Context, cs *Client, ns, service string, withRBAC bool) error {
	n, err := NamesFor(service)
	if err != nil {
		return err
	}
	anchor, err := cs.ConfigMaps(ns).Get(ctx, n.Injection, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		anchor = nil
	case err != nil:
		return fmt.Errorf("kube heal: %w", err)
	}
	var errs []error
	if err := restoreService(ctx, cs, ns, n, anchor); err != nil {
		// The anchor holds the only copy of the Service as it was: keep it
		// (and with it everything it owns) for the next try.
		return err
	}
	del := func(kind string, f func() error) {
		if err := f(); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("kube heal: delete %s %s/%s: %w", kind, ns, n.Injection, err))
		}
	}
	opts := metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}
	del("shadow Service", func() error { return cs.Services(ns).Delete(ctx, n.Shadow, opts) })
	del("Deployment", func() error { return cs.Deployments(ns).Delete(ctx, n.Injection, opts) })
	del("Lease", func() error { return cs.Leases(ns).Delete(ctx, n.Injection, opts) })
	if withRBAC {
		del("ServiceAccount", func() error { return cs.ServiceAccounts(ns).Delete(ctx, n.Injection, opts) })
		del("RoleBinding", func() error { return cs.RoleBindings(ns).Delete(ctx, n.Injection, opts) })
		del("Role", func() error { return cs.Roles(ns).Delete(ctx, n.Injection, opts) })
	}
	if len(errs) == 0 {
		del("ConfigMap", func() error { return cs.ConfigMaps(ns).Delete(ctx, n.Injection, opts) })
	}
	return errors.Join(errs...)
}

// restoreService puts back the selector and annotations saved in anchor,
// if the Service still carries the injection's annotation.
func restoreService(ctx context.Context, cs *Client, ns string, n Names, anchor *corev1.ConfigMap) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := cs.Services(ns).Get(ctx, n.Service, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil // deleted meanwhile: nothing to restore
		}
		if err != nil {
			return fmt.Errorf("kube heal: %w", err)
		}
		if svc.Annotations[AnnotationInjected] != n.Injection {
			return nil // never switched, or restored already
		}
		if anchor == nil {
			return fmt.Errorf("kube heal: Service %s/%s is switched to the proxy but the ConfigMap %s that holds it as it was is gone: set its selector back by hand and remove the annotation %s",
				ns, n.Service, n.Injection, AnnotationInjected)
		}
		var saved corev1.Service
		if err := json.Unmarshal([]byte(anchor.Data[keyService]), &saved); err != nil {
			return fmt.Errorf("kube heal: ConfigMap %s/%s key %s: %w", ns, n.Injection, keyService, err)
		}
		svc.Spec.Selector = maps.Clone(saved.Spec.Selector)
		svc.Annotations = maps.Clone(saved.Annotations)
		_, err = cs.Services(ns).Update(ctx, svc, metav1.UpdateOptions{})
		return err
	})
}
