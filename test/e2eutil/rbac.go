package e2eutil

import (
	"context"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// GrantConfigMapReads lets service account sa of ns get, list and watch
// the namespace's ConfigMaps: what a pod's account needs where the CSI
// driver reads as the pods.
func GrantConfigMapReads(t *testing.T, client kubernetes.Interface, ns, sa string) {
	t.Helper()
	GrantReads(t, client, ns, sa, "configmaps")
}

// GrantReads lets service account sa of ns get, list and watch the
// namespace's objects of resource: those named, or every one where none
// is. The role and its binding are named after the resource and sa.
func GrantReads(t *testing.T, client kubernetes.Interface, ns, sa, resource string, names ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: resource + "-reader-" + sa},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{resource}, ResourceNames: names, Verbs: []string{"get", "list", "watch"}}}}
	if _, err := client.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa, Namespace: ns}}}
	if _, err := client.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}
