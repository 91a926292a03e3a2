// Package injecttest holds what the tests of injections share: a backend
// Service to inject, the objects an injection owns, and the check that a
// Service is back as it was.
package injecttest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
	"github.com/vmcp-chaos/vmcp-chaos/kube/inject"
)

// Backend creates namespace ns (if needed) and in it a backend's Service
// name: selector app=name, one port 8080 -> 9090, a label and an
// annotation of its own. It returns the Service as stored.
func Backend(ctx context.Context, t testing.TB, cs kubernetes.Interface, ns, name string) *corev1.Service {
	t.Helper()
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"app.kubernetes.io/name": name},
			Annotations: map[string]string{"example.com/owner": "team-mcp"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Name: "mcp", Port: 8080, TargetPort: intstr.FromInt32(9090)}}},
	}
	got, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// Object is one object of an injection and its owner references.
type Object struct {
	Kind   string
	Owners []metav1.OwnerReference
}

// Owned reads the objects an injection makes besides its anchor (failing
// t when one is missing).
func Owned(ctx context.Context, t testing.TB, cs kubernetes.Interface, ns string, n inject.Names) []Object {
	t.Helper()
	var out []Object
	add := func(kind string, m metav1.Object, err error) {
		if err != nil {
			t.Fatalf("%s of injection %s: %v", kind, n.Injection, err)
		}
		out = append(out, Object{kind, m.GetOwnerReferences()})
	}
	get := metav1.GetOptions{}
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx, n.Injection, get)
	add("Lease", l, err)
	s, err := cs.CoreV1().Services(ns).Get(ctx, n.Shadow, get)
	add("shadow Service", s, err)
	sa, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, n.Injection, get)
	add("ServiceAccount", sa, err)
	r, err := cs.RbacV1().Roles(ns).Get(ctx, n.Injection, get)
	add("Role", r, err)
	rb, err := cs.RbacV1().RoleBindings(ns).Get(ctx, n.Injection, get)
	add("RoleBinding", rb, err)
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, n.Injection, get)
	add("Deployment", d, err)
	return out
}

// AssertRestored checks that the Service is exactly before (but for its
// resourceVersion and managedFields, which every write changes) and that
// the injection's objects are gone: all of them when withRBAC, else all
// but the ServiceAccount, Role and RoleBinding, which must still name the
// (deleted) anchor as their owner for the garbage collector.
func AssertRestored(ctx context.Context, t testing.TB, cs kubernetes.Interface, before *corev1.Service, n inject.Names, withRBAC bool) {
	t.Helper()
	ns := before.Namespace
	now, err := cs.CoreV1().Services(ns).Get(ctx, before.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := comparable(t, before), comparable(t, now); a != b {
		t.Errorf("the Service after heal differs from before the injection:\nbefore %s\nafter  %s", a, b)
	}
	get := metav1.GetOptions{}
	gone := map[string]error{}
	_, gone["anchor ConfigMap"] = cs.CoreV1().ConfigMaps(ns).Get(ctx, n.Injection, get)
	_, gone["Lease"] = cs.CoordinationV1().Leases(ns).Get(ctx, n.Injection, get)
	_, gone["shadow Service"] = cs.CoreV1().Services(ns).Get(ctx, n.Shadow, get)
	_, gone["Deployment"] = cs.AppsV1().Deployments(ns).Get(ctx, n.Injection, get)
	sa, saErr := cs.CoreV1().ServiceAccounts(ns).Get(ctx, n.Injection, get)
	role, roleErr := cs.RbacV1().Roles(ns).Get(ctx, n.Injection, get)
	rb, rbErr := cs.RbacV1().RoleBindings(ns).Get(ctx, n.Injection, get)
	if withRBAC {
		gone["ServiceAccount"], gone["Role"], gone["RoleBinding"] = saErr, roleErr, rbErr
	} else {
		for kind, o := range map[string]struct {
			m   metav1.Object
			err error
		}{"ServiceAccount": {sa, saErr}, "Role": {role, roleErr}, "RoleBinding": {rb, rbErr}} {
			if o.err != nil {
				t.Errorf("%s: %v (left for the garbage collector, it should still exist here)", kind, o.err)
			} else if refs := o.m.GetOwnerReferences(); len(refs) != 1 || refs[0].Name != n.Injection {
				t.Errorf("%s owners %+v: want the anchor %s, for the garbage collector", kind, refs, n.Injection)
			}
		}
	}
	for kind, err := range gone {
		if !apierrors.IsNotFound(err) {
			t.Errorf("%s of injection %s: %v, want it gone", kind, n.Injection, err)
		}
	}
}

// comparable is svc as JSON without the fields every write changes.
func comparable(t testing.TB, svc *corev1.Service) string {
	t.Helper()
	c := svc.DeepCopy()
	c.ResourceVersion, c.ManagedFields = "", nil
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// ServiceAccountConfig reaches the API server of p with the identity of
// the ServiceAccount sa of ns (a token from the TokenRequest API): what a
// pod running as sa may do, it may do.
func ServiceAccountConfig(ctx context.Context, t testing.TB, p *controlplane.Plane, ns, sa string) *rest.Config {
	t.Helper()
	tr, err := p.Clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("token for ServiceAccount %s/%s: %v", ns, sa, err)
	}
	return &rest.Config{Host: p.Config.Host, TLSClientConfig: rest.TLSClientConfig{CAData: p.Config.CAData}, BearerToken: tr.Status.Token}
}

// Client is an injection client for cfg.
func Client(t testing.TB, cfg *rest.Config) *inject.Client {
	t.Helper()
	c, err := inject.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// KubeconfigFile writes cfg (server, CA, bearer token) as a kubeconfig
// file in a temporary directory of t, for a process to use.
func KubeconfigFile(t testing.TB, cfg *rest.Config) string {
	t.Helper()
	c := clientcmdapi.NewConfig()
	c.Clusters["test"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	c.AuthInfos["test"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	c.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: "test"}
	c.CurrentContext = "test"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*c, path); err != nil {
		t.Fatal(err)
	}
	return path
}
