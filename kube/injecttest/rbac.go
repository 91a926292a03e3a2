package injecttest

import (
	"context"
	"os"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/vmcp-chaos/vmcp-chaos/kube/controlplane"
)

// AsBoundUser creates in ns the Roles of the manifest file (YAML documents
// separated by ---), binds them all to a new user with no group, and
// returns that user's configuration: it may do what the manifest grants,
// and nothing else.
func AsBoundUser(ctx context.Context, t testing.TB, p *controlplane.Plane, ns, user, file string) *rest.Config {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for i, doc := range strings.Split(string(data), "\n---\n") {
		var role rbacv1.Role
		if err := yaml.UnmarshalStrict([]byte(doc), &role); err != nil {
			t.Fatalf("%s document %d: %v", file, i+1, err)
		}
		if _, err := p.Clientset.RbacV1().Roles(ns).Create(ctx, &role, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s document %d: %v", file, i+1, err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
		}
		if _, err := p.Clientset.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := p.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
