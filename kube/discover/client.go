package discover

import (
	"fmt"

	"k8s.io/client-go/discovery"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
)

// Client is the part of a Kubernetes clientset discovery uses (a
// kubernetes.Clientset is one; NewClient makes a smaller one).
type Client interface {
	CoreV1() corev1.CoreV1Interface
	Discovery() discovery.DiscoveryInterfaces
}

type client struct {
	core *corev1.CoreV1Client
	disc *discovery.DiscoveryClient
}

func (c *client) CoreV1() corev1.CoreV1Interface           { return c.core }
func (c *client) Discovery() discovery.DiscoveryInterfaces { return c.disc }

// NewClient returns a Client for cfg.
func NewClient(cfg *rest.Config) (Client, error) {
	core, err := corev1.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kube: %w", err)
	}
	return &client{core: core, disc: disc}, nil
}
