package manifest

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// With Grants, each workload with converted volumes is followed by the Role
// and RoleBinding its pods' account needs where the driver reads as the
// pods: exactly the objects its driver volumes read (a Secret too with
// --secrets), bound to its service account in its namespace. A second run
// over its own output, converting more, replaces them instead of adding
// more.
func TestConvertWritesGrants(t *testing.T) {
	out, summary := convertFile(t, "testdata/web.yaml", Options{Grants: true, Volumes: []string{"conf"}})
	golden(t, "testdata/web.granted.converted.yaml", out)
	golden(t, "testdata/web.granted.summary.txt", summary)
	role, binding := grantsIn(t, out)
	if want := []string{"web-nginx"}; len(role.Rules) != 1 || !slices.Equal(role.Rules[0].ResourceNames, want) {
		t.Errorf("after converting conf, the Role's rules are %+v, want get, list and watch on configmaps %v", role.Rules, want)
	}
	if s := binding.Subjects; len(s) != 1 || s[0].Kind != "ServiceAccount" || s[0].Name != "default" || s[0].Namespace != "shop" || binding.RoleRef.Name != role.Name {
		t.Errorf("RoleBinding %+v", binding)
	}

	var again, againSummary bytes.Buffer
	results, err := Convert(strings.NewReader(out), &again, Options{Grants: true, Secrets: true})
	if err != nil {
		t.Fatal(err)
	}
	Summary(&againSummary, results)
	role, _ = grantsIn(t, again.String())
	want := map[string][]string{"configmaps": {"web-nginx", "web-site"}, "secrets": {"web-tls"}}
	for _, rule := range role.Rules {
		if got := want[rule.Resources[0]]; !slices.Equal(rule.ResourceNames, got) || !slices.Equal(rule.Verbs, []string{"get", "list", "watch"}) {
			t.Errorf("rule %+v, want %v on %s", rule, got, rule.Resources[0])
		}
		delete(want, rule.Resources[0])
	}
	if len(want) > 0 {
		t.Errorf("after converting the rest, no rule for %v:\n%s", want, again.String())
	}
	if !strings.Contains(againSummary.String(), "granted service account shop/default get, list and watch on configmaps web-nginx, web-site; secrets web-tls") {
		t.Errorf("summary:\n%s", againSummary.String())
	}
}

// A workload that names no namespace gets grants that name none either
// (they go where it goes), their subject in the namespace --namespace
// gives, and the summary says it was assumed.
func TestGrantOfAWorkloadWithoutANamespace(t *testing.T) {
	in := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  serviceAccountName: app\n  containers:\n  - name: c\n    image: x\n" +
		"  volumes:\n  - name: v\n    configMap:\n      name: cfg\n"
	var out, summary bytes.Buffer
	results, err := Convert(strings.NewReader(in), &out, Options{Grants: true, Namespace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	Summary(&summary, results)
	role, binding := grantsIn(t, out.String())
	if role.Namespace != "" || binding.Namespace != "" || binding.Subjects[0].Namespace != "team" || binding.Subjects[0].Name != "app" {
		t.Errorf("Role in %q, RoleBinding in %q, subject %+v", role.Namespace, binding.Namespace, binding.Subjects)
	}
	if !strings.Contains(summary.String(), "namespace team assumed") {
		t.Errorf("summary:\n%s", summary.String())
	}
}

// grantsIn decodes the one Role and the one RoleBinding of the documents.
func grantsIn(t *testing.T, docs string) (rbacv1.Role, rbacv1.RoleBinding) {
	t.Helper()
	var role rbacv1.Role
	var binding rbacv1.RoleBinding
	roles, bindings := 0, 0
	for _, doc := range strings.Split(docs, "\n---\n") {
		var meta struct{ Kind string }
		if err := yaml.Unmarshal([]byte(doc), &meta); err != nil {
			t.Fatal(err)
		}
		var err error
		switch meta.Kind {
		case "Role":
			roles++
			err = yaml.UnmarshalStrict([]byte(doc), &role)
		case "RoleBinding":
			bindings++
			err = yaml.UnmarshalStrict([]byte(doc), &binding)
		}
		if err != nil {
			t.Fatalf("%v:\n%s", err, doc)
		}
	}
	if roles != 1 || bindings != 1 {
		t.Fatalf("%d Roles and %d RoleBindings, want one of each:\n%s", roles, bindings, docs)
	}
	if role.Labels[GrantLabel] != GrantLabelValue || role.Name != "nodeagent-reads-deployment-web" && role.Name != "nodeagent-reads-pod-p" {
		t.Errorf("Role %s labels %v", role.Name, role.Labels)
	}
	return role, binding
}

// A Pod with a generateName alone gets grants named after it, without the
// dash that would end the name.
func TestGrantOfAPodWithAGeneratedName(t *testing.T) {
	in := "apiVersion: v1\nkind: Pod\nmetadata:\n  generateName: job-\n  namespace: ns\nspec:\n  containers:\n  - name: c\n    image: x\n" +
		"  volumes:\n  - name: v\n    configMap:\n      name: cfg\n"
	var out bytes.Buffer
	results, err := Convert(strings.NewReader(in), &out, Options{Grants: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 1 || results[0].Grant == nil || results[0].Grant.Name != "nodeagent-reads-pod-job" {
		t.Fatalf("results %+v", results)
	}
}
