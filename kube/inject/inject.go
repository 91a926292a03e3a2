package inject

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/vmcp-chaos/vmcp-chaos/proxy"
)

// Spec is one injection to make.
type Spec struct {
	// Namespace and Service name the Service to put the proxy in front of.
	Namespace, Service string
	// Faults are the proxy's faults, as its control API takes them (YAML
	// or JSON list); checked before anything is created.
	Faults []byte
	// Image is the proxy's image: the static chaos binary FROM scratch
	// (chaos kube image builds it).
	Image string
	// LeaseDuration is how long the injection outlives its last renewal
	// (whole seconds, at least 2 s).
	LeaseDuration time.Duration
	// Holder names the renewer in the Lease (e.g. chaos-cli@host/pid).
	Holder string
}

// Injection is a made injection.
type Injection struct {
	Names
	Namespace string
	// Port is the proxied port: the Service's port and the proxy's
	// listen port (the Service's target port).
	Port, TargetPort int32
	// Upstream is the proxy's upstream: the shadow Service.
	Upstream string
}

// Inject makes the injection of spec: it checks the Service can be
// proxied (a selector, exactly one TCP port with a numbered target port,
// not injected already), stores it in the anchor, creates the other
// objects, and switches the Service's selector to the proxy's pods last.
// On any error what was created is removed again and the Service is left
// as it was.
func Inject(ctx context.Context, cs *Client, spec Spec) (*Injection, error) {
	n, err := NamesFor(spec.Service)
	if err != nil {
		return nil, err
	}
	if err := proxy.NewEngine().Set(spec.Faults, "kube inject"); err != nil {
		return nil, fmt.Errorf("kube inject: faults: %w", err)
	}
	if spec.Image == "" {
		return nil, errors.New("kube inject: no proxy image")
	}
	secs := int32(spec.LeaseDuration / time.Second)
	if secs < 2 || time.Duration(secs)*time.Second != spec.LeaseDuration {
		return nil, fmt.Errorf("kube inject: lease duration %s: want whole seconds, at least 2s", spec.LeaseDuration)
	}
	ns := spec.Namespace
	svc, err := cs.Services(ns).Get(ctx, spec.Service, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("kube inject: %w", err)
	}
	inj, err := checkProxyable(svc, n)
	if err != nil {
		return nil, err
	}
	saved, err := json.Marshal(svc)
	if err != nil {
		return nil, fmt.Errorf("kube inject: %w", err)
	}
	anchor := &corev1.ConfigMap{ObjectMeta: meta(n, n.Injection, nil), Data: map[string]string{
		keyService: string(saved), keyFaults: string(spec.Faults), keyUpstream: inj.Upstream,
		keyListen: listenAddr(inj.TargetPort), keyLease: spec.LeaseDuration.String(),
	}}
	anchor, err = cs.ConfigMaps(ns).Create(ctx, anchor, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("kube inject: %s/%s: an injection of this Service exists already (ConfigMap %s): heal it first (chaos kube heal)", ns, spec.Service, n.Injection)
	}
	if err != nil {
		return nil, fmt.Errorf("kube inject: %w", err)
	}
	if err := create(ctx, cs, n, anchor, spec, inj.TargetPort, svc); err != nil {
		// Undo with a context of its own: ctx may be what ended.
		undoCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		return nil, errors.Join(err, Restore(undoCtx, cs, ns, n.Service, true))
	}
	return inj, nil
}

// checkProxyable returns what the injection of svc will be, or why the
// proxy cannot stand in for it.
func checkProxyable(svc *corev1.Service, n Names) (*Injection, error) {
	where := svc.Namespace + "/" + svc.Name
	if by := svc.Annotations[AnnotationInjected]; by != "" {
		return nil, fmt.Errorf("kube inject: %s is injected already (by %s): heal it first", where, by)
	}
	if len(svc.Spec.Selector) == 0 {
		return nil, fmt.Errorf("kube inject: %s has no selector (endpoints managed by hand or ExternalName): the proxy stands in for selected pods only", where)
	}
	if len(svc.Spec.Ports) != 1 {
		return nil, fmt.Errorf("kube inject: %s has %d ports: the proxy stands in for a Service with exactly one (its MCP port)", where, len(svc.Spec.Ports))
	}
	p := svc.Spec.Ports[0]
	if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
		return nil, fmt.Errorf("kube inject: %s port %d is %s: MCP runs on TCP", where, p.Port, p.Protocol)
	}
	target := p.Port
	switch {
	case p.TargetPort.Type == intstr.String:
		return nil, fmt.Errorf("kube inject: %s port %d targets the named port %q: the proxy needs a numbered target port", where, p.Port, p.TargetPort.StrVal)
	case p.TargetPort.IntVal != 0:
		target = p.TargetPort.IntVal
	}
	return &Injection{Names: n, Namespace: svc.Namespace, Port: p.Port, TargetPort: target,
		Upstream: fmt.Sprintf("http://%s.%s.svc:%d", n.Shadow, svc.Namespace, p.Port)}, nil
}

// create makes the objects owned by the anchor, then switches the
// Service's selector to the proxy's pods.
func create(ctx context.Context, cs *Client, n Names, anchor *corev1.ConfigMap, spec Spec, port int32, svc *corev1.Service) error {
	ns := anchor.Namespace
	wrap := func(kind string, err error) error {
		if err != nil {
			return fmt.Errorf("kube inject: create %s %s/%s: %w", kind, ns, n.Injection, err)
		}
		return nil
	}
	now := metav1.NowMicro()
	if _, err := cs.Leases(ns).Create(ctx, lease(n, spec.Holder, int32(spec.LeaseDuration/time.Second), now, anchor), metav1.CreateOptions{}); err != nil {
		return wrap("Lease", err)
	}
	if _, err := cs.Services(ns).Create(ctx, shadowService(n, svc, anchor), metav1.CreateOptions{}); err != nil {
		return wrap("shadow Service", err)
	}
	sa, role, rb := rbac(n, anchor)
	if _, err := cs.ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
		return wrap("ServiceAccount", err)
	}
	if _, err := cs.Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return wrap("Role", err)
	}
	if _, err := cs.RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		return wrap("RoleBinding", err)
	}
	if _, err := cs.Deployments(ns).Create(ctx, deployment(n, spec.Image, port, anchor), metav1.CreateOptions{}); err != nil {
		return wrap("Deployment", err)
	}
	svc = svc.DeepCopy()
	svc.Spec.Selector = map[string]string{LabelInjection: n.Injection}
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[AnnotationInjected] = n.Injection
	if _, err := cs.Services(ns).Update(ctx, svc, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("kube inject: switch Service %s/%s to the proxy: %w", ns, n.Service, err)
	}
	return nil
}
