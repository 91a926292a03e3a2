package inject

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// meta is the metadata of an object of the injection n: its labels and,
// once the anchor exists, the owner reference to it.
func meta(n Names, name string, owner *corev1.ConfigMap) metav1.ObjectMeta {
	m := metav1.ObjectMeta{Name: name, Labels: map[string]string{LabelInjection: n.Injection, LabelManagedBy: ManagedBy}}
	if owner != nil {
		m.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
		}}
	}
	return m
}

// shadowService selects the original pods on the original ports: the
// proxy's upstream.
func shadowService(n Names, orig *corev1.Service, owner *corev1.ConfigMap) *corev1.Service {
	ports := make([]corev1.ServicePort, len(orig.Spec.Ports))
	for i, p := range orig.Spec.Ports {
		ports[i] = corev1.ServicePort{Name: p.Name, Protocol: p.Protocol, Port: p.Port, TargetPort: p.TargetPort, AppProtocol: p.AppProtocol}
	}
	return &corev1.Service{
		ObjectMeta: meta(n, n.Shadow, owner),
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Selector: orig.Spec.Selector, Ports: ports},
	}
}

// lease is the dead-man switch the CLI renews.
func lease(n Names, holder string, seconds int32, now metav1.MicroTime, owner *corev1.ConfigMap) *coordinationv1.Lease {
	return &coordinationv1.Lease{
		ObjectMeta: meta(n, n.Injection, owner),
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds,
			AcquireTime: &now, RenewTime: &now},
	}
}

// ProxyRules are the proxy's permissions, in its namespace and on its
// injection's objects only: restore the Service, delete the rest. Its
// ServiceAccount, Role and RoleBinding are left to the garbage collector
// (they are owned by the anchor): whichever it deleted first would take
// away its identity or its right to delete the others.
func ProxyRules(n Names) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{n.Service}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"services"}, ResourceNames: []string{n.Shadow}, Verbs: []string{"delete"}},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{n.Injection}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{n.Injection}, Verbs: []string{"get", "delete"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, ResourceNames: []string{n.Injection}, Verbs: []string{"delete"}},
	}
}

// rbac is the proxy's ServiceAccount, Role and RoleBinding.
func rbac(n Names, owner *corev1.ConfigMap) (*corev1.ServiceAccount, *rbacv1.Role, *rbacv1.RoleBinding) {
	sa := &corev1.ServiceAccount{ObjectMeta: meta(n, n.Injection, owner)}
	role := &rbacv1.Role{ObjectMeta: meta(n, n.Injection, owner), Rules: ProxyRules(n)}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: meta(n, n.Injection, owner),
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: n.Injection},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: n.Injection, Namespace: owner.Namespace}},
	}
	return sa, role, rb
}

// deployment runs one proxy: `chaos kube proxy`, reading its
// configuration from the anchor, listening on the Service's target port.
func deployment(n Names, image string, port int32, owner *corev1.ConfigMap) *appsv1.Deployment {
	labels := map[string]string{LabelInjection: n.Injection, LabelManagedBy: ManagedBy}
	return &appsv1.Deployment{
		ObjectMeta: meta(n, n.Injection, owner),
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{LabelInjection: n.Injection}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					ServiceAccountName: n.Injection,
					Containers: []corev1.Container{{
						Name:  "chaos-proxy",
						Image: image,
						Args:  []string{"kube", "proxy", "--namespace", owner.Namespace, "--service", n.Service},
						Ports: []corev1.ContainerPort{{Name: "mcp", ContainerPort: port, Protocol: corev1.ProtocolTCP}},
						ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
							TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(port)}}},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot:             ptr.To(true),
							RunAsUser:                ptr.To[int64](65532),
							ReadOnlyRootFilesystem:   ptr.To(true),
							AllowPrivilegeEscalation: ptr.To(false),
							Capabilities:             capabilities(port),
						},
					}},
				},
			},
		},
	}
}

// listenAddr is the proxy's MCP listen address for a target port.
func listenAddr(port int32) string { return ":" + strconv.Itoa(int(port)) }

// capabilities drops every capability but the one a port below 1024 needs.
func capabilities(port int32) *corev1.Capabilities {
	c := &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
	if port < 1024 {
		c.Add = []corev1.Capability{"NET_BIND_SERVICE"}
	}
	return c
}
