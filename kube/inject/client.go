package inject

import (
	"fmt"
	"net/http"

	appsv1 "k8s.io/client-go/kubernetes/typed/apps/v1"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	rbacv1 "k8s.io/client-go/kubernetes/typed/rbac/v1"
	"k8s.io/client-go/rest"
)

// Client is the part of a Kubernetes clientset an injection uses: a
// kubernetes.Clientset is one; NewClient makes one without the clients of
// every other API group (which would add about 50 MB to the chaos binary).
type Client interface {
	CoreV1() corev1.CoreV1Interface
	AppsV1() appsv1.AppsV1Interface
	RbacV1() rbacv1.RbacV1Interface
	CoordinationV1() coordinationv1.CoordinationV1Interface
}

// clients are the typed clients of the four API groups.
type clients struct {
	core  *corev1.CoreV1Client
	apps  *appsv1.AppsV1Client
	rbac  *rbacv1.RbacV1Client
	coord *coordinationv1.CoordinationV1Client
}

func (c *clients) CoreV1() corev1.CoreV1Interface                         { return c.core }
func (c *clients) AppsV1() appsv1.AppsV1Interface                         { return c.apps }
func (c *clients) RbacV1() rbacv1.RbacV1Interface                         { return c.rbac }
func (c *clients) CoordinationV1() coordinationv1.CoordinationV1Interface { return c.coord }

// NewClient returns a Client for cfg, sharing one HTTP client.
func NewClient(cfg *rest.Config) (Client, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	c, err := newClients(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return c, nil
}

func newClients(cfg *rest.Config, hc *http.Client) (*clients, error) {
	var c clients
	var err error
	if c.core, err = corev1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if c.apps, err = appsv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if c.rbac, err = rbacv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	if c.coord, err = coordinationv1.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, err
	}
	return &c, nil
}
