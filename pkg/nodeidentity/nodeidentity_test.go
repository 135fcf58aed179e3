package nodeidentity

import "testing"

func TestUserAndNode(t *testing.T) {
	if got := User("kind-worker"); got != "system:node:kind-worker" {
		t.Errorf("User = %q", got)
	}
	if node, ok := Node(User("n-1")); !ok || node != "n-1" {
		t.Errorf("Node(User(n-1)) = %q, %v", node, ok)
	}
	for _, user := range []string{"system:serviceaccount:kube-system:default", "admin", "system:nodes"} {
		if node, ok := Node(user); ok {
			t.Errorf("Node(%q) = %q: not a node's identity", user, node)
		}
	}
}
