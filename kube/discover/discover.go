// Package discover reads a toolhive deployment from a cluster: given a
// VirtualMCPServer, the MCPGroup it aggregates, the MCPServers of that
// group and the Services they run behind; and writes an experiment
// skeleton from it (Skeleton). It reads toolhive's objects as
// unstructured data (no dependency on toolhive's Go module); the fields it
// relies on are those the test CRDs (testdata/toolhive) type, each file
// naming its source in toolhive.
package discover

import (
	"context"
	"fmt"
	"maps"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group is toolhive's API group.
const Group = "toolhive.stacklok.dev"

// versions are toolhive's API versions, preferred first.
var versions = []string{"v1beta1", "v1alpha1"}

// Backend is one backend of a VirtualMCPServer.
type Backend struct {
	// Name is the MCPServer's name (how the gateway names the backend).
	Name string
	// Service is the Service the MCPServer runs behind (toolhive's
	// operator names it mcp-NAME-proxy), "" when it does not exist (yet).
	Service string
	// Port is the Service's first port (0 without a Service).
	Port int32
	// URL is the MCPServer's status.url, as the operator reports it.
	URL string
}

// VirtualMCP is a VirtualMCPServer and its backends.
type VirtualMCP struct {
	Namespace, Name string
	// Group is the MCPGroup it aggregates (spec.groupRef).
	Group string
	// URL is its status.url ("" until the operator reports one).
	URL string
	// Backends are the MCPServers of Group, by name.
	Backends []Backend
}

// Discover reads the VirtualMCPServer ns/name and its backends: the
// MCPServers whose spec.groupRef names its group, and those the MCPGroup's
// status.servers lists.
func Discover(ctx context.Context, c *Client, ns, name string) (*VirtualMCP, error) {
	dyn := c.dyn
	served, err := servedVersions(ctx, c)
	if err != nil {
		return nil, err
	}
	if served["virtualmcpservers"] == "" {
		return nil, fmt.Errorf("discover: the cluster serves no %s VirtualMCPServer (versions tried: %v): is toolhive's operator installed?", Group, versions)
	}
	vmcp, err := dyn.Resource(gvr(served["virtualmcpservers"], "virtualmcpservers")).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("discover: VirtualMCPServer %s/%s: %w", ns, name, err)
	}
	group := groupRef(vmcp)
	if group == "" {
		return nil, fmt.Errorf("discover: VirtualMCPServer %s/%s: spec.groupRef names no MCPGroup", ns, name)
	}
	v := &VirtualMCP{Namespace: ns, Name: name, Group: group}
	v.URL, _, _ = unstructured.NestedString(vmcp.Object, "status", "url")
	servers := map[string]*unstructured.Unstructured{}
	if served["mcpservers"] == "" || served["mcpgroups"] == "" {
		return nil, fmt.Errorf("discover: the cluster serves no %s MCPServer or MCPGroup (versions tried: %v)", Group, versions)
	}
	list, err := dyn.Resource(gvr(served["mcpservers"], "mcpservers")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("discover: list MCPServers in %s: %w", ns, err)
	}
	for i := range list.Items {
		if groupRef(&list.Items[i]) == group {
			servers[list.Items[i].GetName()] = &list.Items[i]
		}
	}
	g, err := dyn.Resource(gvr(served["mcpgroups"], "mcpgroups")).Namespace(ns).Get(ctx, group, metav1.GetOptions{})
	switch {
	case err == nil:
		listed, _, _ := unstructured.NestedStringSlice(g.Object, "status", "servers")
		for _, s := range listed {
			if _, ok := servers[s]; !ok {
				servers[s] = nil // listed by the group, not (or no longer) readable
			}
		}
	case !apierrors.IsNotFound(err):
		return nil, fmt.Errorf("discover: MCPGroup %s/%s: %w", ns, group, err)
	}
	for _, s := range slices.Sorted(maps.Keys(servers)) {
		b := Backend{Name: s}
		if obj := servers[s]; obj != nil {
			b.URL, _, _ = unstructured.NestedString(obj.Object, "status", "url")
		}
		svc, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace(ns).Get(ctx, ServiceName(s), metav1.GetOptions{})
		switch {
		case err == nil:
			b.Service = svc.GetName()
			if ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports"); len(ports) > 0 {
				if p, ok := ports[0].(map[string]any); ok {
					port, _, _ := unstructured.NestedInt64(p, "port")
					b.Port = int32(port)
				}
			}
		case !apierrors.IsNotFound(err):
			return nil, fmt.Errorf("discover: Service %s/%s: %w", ns, ServiceName(s), err)
		}
		v.Backends = append(v.Backends, b)
	}
	return v, nil
}

// ServiceName is the Service toolhive's operator puts in front of the
// MCPServer name.
func ServiceName(server string) string { return "mcp-" + server + "-proxy" }

// servedVersions maps each of toolhive's resources the cluster serves to
// the preferred version it is served in.
func servedVersions(ctx context.Context, c *Client) (map[string]string, error) {
	served := map[string]string{}
	for _, v := range slices.Backward(versions) {
		list, err := c.resources(ctx, Group+"/"+v)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("discover: %s/%s: %w", Group, v, err)
		}
		for _, r := range list.APIResources {
			served[r.Name] = v // later (preferred) versions overwrite
		}
	}
	return served, nil
}

// groupRef reads spec.groupRef: {name: G} (current) or a plain string
// (older releases).
func groupRef(obj *unstructured.Unstructured) string {
	if s, ok, _ := unstructured.NestedString(obj.Object, "spec", "groupRef"); ok {
		return s
	}
	s, _, _ := unstructured.NestedString(obj.Object, "spec", "groupRef", "name")
	return s
}

func gvr(version, resource string) schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: Group, Version: version, Resource: resource}
}
