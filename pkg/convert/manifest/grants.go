package manifest

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// GrantLabel marks the Roles and RoleBindings Convert writes, so that a
// user finds them again (kubectl get roles -l ...).
const GrantLabel = "app.kubernetes.io/managed-by"

// GrantLabelValue is GrantLabel's value on them.
const GrantLabelValue = "nodeagent-convert"

// Grant is what a converted workload's pods need where the driver reads
// as the pods (its default): a Role that lets their service account get,
// list and watch exactly the objects its driver volumes read, and its
// RoleBinding, both named Name.
type Grant struct {
	Name string
	// Namespace is the subject's: the workload's own, else
	// Options.Namespace; NamespaceAssumed when neither said it.
	Namespace        string
	NamespaceAssumed bool
	ServiceAccount   string
	ConfigMaps       []string
	Secrets          []string
}

// Describe is the grant in a user's words, for Summary.
func (g *Grant) Describe() string {
	var what []string
	if len(g.ConfigMaps) > 0 {
		what = append(what, "configmaps "+strings.Join(g.ConfigMaps, ", "))
	}
	if len(g.Secrets) > 0 {
		what = append(what, "secrets "+strings.Join(g.Secrets, ", "))
	}
	s := fmt.Sprintf("granted service account %s/%s get, list and watch on %s (Role and RoleBinding %s)",
		g.Namespace, g.ServiceAccount, strings.Join(what, "; "), g.Name)
	if g.NamespaceAssumed {
		s += "; namespace " + g.Namespace + " assumed, as the object names none: --namespace says where it goes"
	}
	return s
}

// grantOf is the grant the pod spec at spec needs for its driver volumes,
// or nil where it has none. kind, name and namespace are the workload's;
// defaultNamespace stands in for a namespace it does not name.
func grantOf(spec *yaml.RNode, kind, name, namespace, defaultNamespace string) (*Grant, error) {
	var pod corev1.PodSpec
	if err := decode(spec, &pod); err != nil {
		return nil, err
	}
	g := &Grant{Name: "nodeagent-reads-" + strings.ToLower(kind) + "-" + name, Namespace: namespace, ServiceAccount: podrefs.ServiceAccountOf(&pod)}
	if g.Namespace == "" {
		g.Namespace, g.NamespaceAssumed = defaultNamespace, true
		if g.Namespace == "" {
			g.Namespace = metav1.NamespaceDefault
		}
	}
	for i := range pod.Volumes {
		v := &pod.Volumes[i]
		if v.CSI == nil || v.CSI.Driver != podrefs.DriverName {
			continue
		}
		source, problems := podrefs.ParseDriverAttributes(v.CSI.VolumeAttributes)
		if len(problems) > 0 {
			continue // the driver refuses it, and reads nothing for it
		}
		for _, ref := range source.Reads() {
			switch ref.Kind {
			case model.ConfigMap:
				g.ConfigMaps = appendNew(g.ConfigMaps, ref.Name)
			case model.Secret:
				g.Secrets = appendNew(g.Secrets, ref.Name)
			}
		}
	}
	if len(g.ConfigMaps) == 0 && len(g.Secrets) == 0 {
		return nil, nil
	}
	return g, nil
}

// workloadName is the object's name, or for one that has only a
// generateName (a Pod created with kubectl create), that name without its
// trailing dash: a grant's name must end with a letter or digit.
func workloadName(node *yaml.RNode) string {
	if name := node.GetName(); name != "" {
		return name
	}
	generated, _ := node.Pipe(yaml.Lookup("metadata", "generateName"))
	return strings.TrimRight(yaml.GetValue(generated), "-.")
}

func appendNew(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// nodes are the Role and the RoleBinding of g, in the workload's namespace
// when it names one (otherwise none, so that they go where it goes).
func (g *Grant) nodes() ([]*yaml.RNode, error) {
	namespace := g.Namespace
	if g.NamespaceAssumed {
		namespace = ""
	}
	type rule struct {
		APIGroups     []string `json:"apiGroups"`
		Resources     []string `json:"resources"`
		ResourceNames []string `json:"resourceNames"`
		Verbs         []string `json:"verbs"`
	}
	type metadata struct {
		Name      string            `json:"name"`
		Namespace string            `json:"namespace,omitempty"`
		Labels    map[string]string `json:"labels"`
	}
	meta := metadata{g.Name, namespace, map[string]string{GrantLabel: GrantLabelValue}}
	var rules []rule
	for _, r := range []struct {
		resource string
		names    []string
	}{{"configmaps", g.ConfigMaps}, {"secrets", g.Secrets}} {
		if len(r.names) > 0 {
			rules = append(rules, rule{[]string{""}, []string{r.resource}, r.names, []string{"get", "list", "watch"}})
		}
	}
	role := struct {
		APIVersion string   `json:"apiVersion"`
		Kind       string   `json:"kind"`
		Metadata   metadata `json:"metadata"`
		Rules      []rule   `json:"rules"`
	}{"rbac.authorization.k8s.io/v1", "Role", meta, rules}
	binding := struct {
		APIVersion string              `json:"apiVersion"`
		Kind       string              `json:"kind"`
		Metadata   metadata            `json:"metadata"`
		RoleRef    map[string]string   `json:"roleRef"`
		Subjects   []map[string]string `json:"subjects"`
	}{"rbac.authorization.k8s.io/v1", "RoleBinding", meta,
		map[string]string{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": g.Name},
		[]map[string]string{{"kind": "ServiceAccount", "name": g.ServiceAccount, "namespace": g.Namespace}}}
	var out []*yaml.RNode
	for _, object := range []any{role, binding} {
		data, err := json.Marshal(object)
		if err != nil {
			return nil, err
		}
		node, err := yaml.Parse(string(data))
		if err != nil {
			return nil, err
		}
		blockStyle(node.YNode())
		out = append(out, node)
	}
	return out, nil
}

// withGrants is nodes with the Role and RoleBinding of each grant: in the
// place of those of the same kind, namespace and name (an earlier run's),
// else right after the document of the workload, grants[i] being those of
// nodes[i].
func withGrants(nodes []*yaml.RNode, grants [][]*Grant) ([]*yaml.RNode, error) {
	existing := map[string]*yaml.RNode{}
	for _, node := range nodes {
		existing[objectKey(node)] = node
	}
	out := make([]*yaml.RNode, 0, len(nodes))
	for i, node := range nodes {
		out = append(out, node)
		for _, g := range grants[i] {
			written, err := g.nodes()
			if err != nil {
				return nil, err
			}
			for _, w := range written {
				if old, ok := existing[objectKey(w)]; ok {
					*old.YNode() = *w.YNode()
					continue
				}
				out = append(out, w)
			}
		}
	}
	return out, nil
}

// objectKey is an object's kind, namespace and name.
func objectKey(node *yaml.RNode) string {
	return node.GetKind() + "/" + node.GetNamespace() + "/" + node.GetName()
}
