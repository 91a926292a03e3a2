package inject

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Client reaches the API server for injections. It is client-go's
// dynamic client with typed objects (k8s.io/api) converted to and from
// unstructured ones: client-go's typed clients would link its scheme of
// every API group, and with it every group's types, into the chaos binary
// (74 MB instead of about 50 MB; kube/README.md).
type Client struct {
	dyn dynamic.Interface
}

// NewClient returns a Client for cfg.
func NewClient(cfg *rest.Config) (*Client, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return &Client{dyn: dyn}, nil
}

// NewClientFor returns a Client acting through dyn.
func NewClientFor(dyn dynamic.Interface) *Client { return &Client{dyn: dyn} }

// Services, ConfigMaps, ServiceAccounts, Deployments, Roles, RoleBindings
// and Leases are the resources of an injection in namespace ns.
func (c *Client) Services(ns string) Resource[corev1.Service] {
	return resource[corev1.Service](c, ns, corev1.SchemeGroupVersion.WithKind("Service"), "services")
}

// ConfigMaps: see Services.
func (c *Client) ConfigMaps(ns string) Resource[corev1.ConfigMap] {
	return resource[corev1.ConfigMap](c, ns, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "configmaps")
}

// ServiceAccounts: see Services.
func (c *Client) ServiceAccounts(ns string) Resource[corev1.ServiceAccount] {
	return resource[corev1.ServiceAccount](c, ns, corev1.SchemeGroupVersion.WithKind("ServiceAccount"), "serviceaccounts")
}

// Deployments: see Services.
func (c *Client) Deployments(ns string) Resource[appsv1.Deployment] {
	return resource[appsv1.Deployment](c, ns, appsv1.SchemeGroupVersion.WithKind("Deployment"), "deployments")
}

// Roles: see Services.
func (c *Client) Roles(ns string) Resource[rbacv1.Role] {
	return resource[rbacv1.Role](c, ns, rbacv1.SchemeGroupVersion.WithKind("Role"), "roles")
}

// RoleBindings: see Services.
func (c *Client) RoleBindings(ns string) Resource[rbacv1.RoleBinding] {
	return resource[rbacv1.RoleBinding](c, ns, rbacv1.SchemeGroupVersion.WithKind("RoleBinding"), "rolebindings")
}

// Leases: see Services.
func (c *Client) Leases(ns string) Resource[coordinationv1.Lease] {
	return resource[coordinationv1.Lease](c, ns, coordinationv1.SchemeGroupVersion.WithKind("Lease"), "leases")
}

// Resource reads and writes objects of one kind in one namespace as T
// (a k8s.io/api type).
type Resource[T any] struct {
	ri  dynamic.ResourceInterface
	gvk schema.GroupVersionKind
}

func resource[T any](c *Client, ns string, gvk schema.GroupVersionKind, plural string) Resource[T] {
	return Resource[T]{ri: c.dyn.Resource(gvk.GroupVersion().WithResource(plural)).Namespace(ns), gvk: gvk}
}

// Get reads the object name.
func (r Resource[T]) Get(ctx context.Context, name string, opts metav1.GetOptions) (*T, error) {
	u, err := r.ri.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return r.typed(u)
}

// Create creates obj and returns it as stored.
func (r Resource[T]) Create(ctx context.Context, obj *T, opts metav1.CreateOptions) (*T, error) {
	u, err := r.unstructured(obj)
	if err != nil {
		return nil, err
	}
	if u, err = r.ri.Create(ctx, u, opts); err != nil {
		return nil, err
	}
	return r.typed(u)
}

// Update updates obj (its resourceVersion guards against lost updates)
// and returns it as stored.
func (r Resource[T]) Update(ctx context.Context, obj *T, opts metav1.UpdateOptions) (*T, error) {
	u, err := r.unstructured(obj)
	if err != nil {
		return nil, err
	}
	if u, err = r.ri.Update(ctx, u, opts); err != nil {
		return nil, err
	}
	return r.typed(u)
}

// Delete deletes the object name.
func (r Resource[T]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.ri.Delete(ctx, name, opts)
}

func (r Resource[T]) unstructured(obj *T) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("kube: %s: %w", r.gvk.Kind, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(r.gvk)
	return u, nil
}

func (r Resource[T]) typed(u *unstructured.Unstructured) (*T, error) {
	var obj T
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &obj); err != nil {
		return nil, fmt.Errorf("kube: %s %s: %w", r.gvk.Kind, u.GetName(), err)
	}
	return &obj, nil
}
