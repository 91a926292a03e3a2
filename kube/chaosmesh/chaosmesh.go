// Package chaosmesh creates and deletes Chaos Mesh objects (PodChaos,
// NetworkChaos) for experiments' chaos_mesh actions: it implements
// experiment.KubeObjects with a dynamic client, so the objects are sent as
// written and Chaos Mesh's CRDs in the cluster validate them.
package chaosmesh

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// Group and Version of Chaos Mesh's API.
const (
	Group   = "chaos-mesh.org"
	Version = "v1alpha1"
)

// resources maps the kinds experiments may create to their resources.
var resources = map[string]string{"PodChaos": "podchaos", "NetworkChaos": "networkchaos"}

// Client creates and deletes Chaos Mesh objects in one cluster.
type Client struct {
	dyn dynamic.Interface
}

// New returns a Client acting through dyn.
func New(dyn dynamic.Interface) *Client { return &Client{dyn: dyn} }

// Ref names obj as kubectl takes it: "RESOURCE/NAME -n NAMESPACE", the
// namespace its metadata names, else namespace.
func (c *Client) Ref(namespace string, obj map[string]any) string {
	u := unstructured.Unstructured{Object: obj}
	if ns := u.GetNamespace(); ns != "" {
		namespace = ns
	}
	return fmt.Sprintf("%s/%s -n %s", resources[u.GetKind()], u.GetName(), namespace)
}

// Create creates obj (a deep copy: the experiment's object is left as
// written) in namespace unless its metadata names one.
func (c *Client) Create(ctx context.Context, namespace string, obj map[string]any) error {
	u := &unstructured.Unstructured{Object: runtime.DeepCopyJSON(obj)}
	res, ok := resources[u.GetKind()]
	if !ok || u.GetAPIVersion() != Group+"/"+Version {
		return fmt.Errorf("chaos mesh: %s %s: want %s/%s PodChaos or NetworkChaos", u.GetAPIVersion(), u.GetKind(), Group, Version)
	}
	if u.GetNamespace() == "" {
		u.SetNamespace(namespace)
	}
	_, err := c.dyn.Resource(gvr(res)).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{})
	return err
}

// Delete deletes ref (as Ref writes it); one already gone is no error.
func (c *Client) Delete(ctx context.Context, ref string) error {
	var res, name, ns string
	if f := strings.Fields(ref); len(f) == 3 && f[1] == "-n" {
		res, name, _ = strings.Cut(f[0], "/")
		ns = f[2]
	}
	if res == "" || name == "" || ns == "" {
		return fmt.Errorf("chaos mesh: bad reference %q", ref)
	}
	err := c.dyn.Resource(gvr(res)).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func gvr(resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: Version, Resource: resource}
}
