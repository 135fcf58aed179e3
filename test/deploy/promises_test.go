//go:build e2e

package deploy

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// README promises what each part may do to a cluster: the agents never
// read Secrets and write only events (the csi agents' SubjectAccessReviews
// ask, they change nothing); analyze only reads, but for the events of
// --serve --events, and reads Secrets only where granted the role that
// says so; the webhook writes its own Secret and its configuration's
// caBundle (its SubjectAccessReviews ask, they change nothing). Every role
// the chart and the kustomize directories grant is held to that, in every
// mode.
func TestRolesKeepREADMEsPromises(t *testing.T) {
	kustomize := tool(t, "KUSTOMIZE_BIN", "kustomize")
	// Each rendering, and whether its driver reads as the pods (the csi
	// mode's default), when its agents may read no ConfigMap either.
	type rendering struct {
		objects []object
		asPods  bool
	}
	var renderings []rendering
	for _, set := range [][]string{{"mode=before"}, {"mode=after"}, {"mode=watch"}, {"mode=csi", "csi.readAs=driver", "csi.checkAccess=true"},
		{"mode=csi"}, {"mode=csi", "csi.readAs=pod", "csi.secrets.enabled=true"}, {"mode=csi", "webhook.enabled=true"}, {"mode=after", "analyze.enabled=true", "analyze.listSecrets=true", "analyze.events=true"}} {
		var args []string
		for _, kv := range set {
			args = append(args, "--set", kv)
		}
		asPods := slices.Contains(set, "mode=csi") && !slices.Contains(set, "csi.readAs=driver")
		renderings = append(renderings, rendering{helmTemplate(t, args...), asPods})
	}
	for _, dir := range []string{"deploy/overlays/before", "deploy/overlays/after", "deploy/overlays/watch", "deploy/overlays/csi",
		"deploy/overlays/csi-webhook", "deploy/overlays/csi-secrets", "deploy/analyze", "deploy/analyze-serve"} {
		renderings = append(renderings, rendering{render(t, kustomize, "build", pinImage(t, dir)), strings.Contains(dir, "csi")})
	}
	roles, asPods := 0, 0
	for _, r := range renderings {
		for _, o := range r.objects {
			if kind := o["kind"]; kind != "ClusterRole" && kind != "Role" {
				continue
			}
			roles++
			name := fmt.Sprint(lookup(o, "metadata", "name"))
			for _, rule := range rules(o) {
				problem := beyondPromise(name, rule)
				if problem == "" && r.asPods && isAgents(name) && slices.Contains(rule.resources, "configmaps") {
					problem = "the driver reading as the pods reads nothing by itself"
				}
				if problem != "" {
					t.Errorf("%s %s: %v: %s", o["kind"], name, rule, problem)
				}
			}
			if r.asPods && isAgents(name) {
				asPods++
			}
		}
	}
	if roles < 10 || asPods < 5 {
		t.Errorf("only %d roles rendered, %d of drivers reading as the pods: the test reads nothing", roles, asPods)
	}
}

// isAgents says whether the role of this name is the agents' (or the
// driver's), not analyze's or the webhook's.
func isAgents(name string) bool {
	return !strings.Contains(name, "webhook") && !strings.Contains(name, "analyze")
}

// rule is one RBAC rule, as rendered.
type rule struct {
	resources, verbs, names []string
	nonResource             bool
}

func rules(role object) []rule {
	var out []rule
	list, _ := role["rules"].([]interface{})
	for _, r := range list {
		m, _ := r.(map[string]interface{})
		out = append(out, rule{resources: strings1(m["resources"]), verbs: strings1(m["verbs"]), names: strings1(m["resourceNames"]),
			nonResource: m["nonResourceURLs"] != nil})
	}
	return out
}

func strings1(v interface{}) []string {
	list, _ := v.([]interface{})
	var out []string
	for _, s := range list {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

// reads are the verbs that change nothing.
var reads = []string{"get", "list", "watch"}

// beyondPromise says what rule of role name grants beyond README's
// promise for its part, or "".
func beyondPromise(name string, r rule) string {
	writes := slices.DeleteFunc(slices.Clone(r.verbs), func(v string) bool { return slices.Contains(reads, v) })
	secrets := slices.Contains(r.resources, "secrets")
	switch {
	case strings.Contains(name, "webhook"):
		if len(writes) > 0 && !slices.Equal(r.resources, []string{"secrets"}) && !slices.Equal(r.resources, []string{"mutatingwebhookconfigurations"}) &&
			!slices.Equal(r.resources, []string{"subjectaccessreviews"}) {
			return "the webhook writes its Secret and its configuration alone (its SubjectAccessReviews ask, they change nothing)"
		}
		if len(writes) > 0 && len(r.names) == 0 && !slices.Equal(writes, []string{"create"}) {
			return "the webhook changes only the objects it names"
		}
	case strings.Contains(name, "analyze-events"):
		if !slices.Equal(r.resources, []string{"events"}) {
			return "analyze's events role grants events alone"
		}
	case strings.Contains(name, "analyze-secrets"):
		if len(writes) > 0 {
			return "analyze never writes"
		}
	case strings.Contains(name, "analyze"):
		if len(writes) > 0 || secrets {
			return "analyze only reads, and Secrets only with its secrets role"
		}
	default: // the agents
		if secrets {
			return "the agents never read Secrets"
		}
		if len(writes) > 0 && !slices.Equal(r.resources, []string{"events"}) && !slices.Equal(r.resources, []string{"subjectaccessreviews"}) {
			return "the agents write events alone"
		}
	}
	return ""
}

// What would break a promise is caught, whichever part's role grants it.
func TestBeyondPromise(t *testing.T) {
	for _, c := range []struct {
		role string
		rule rule
	}{
		{"nodeagent", rule{resources: []string{"secrets"}, verbs: []string{"get"}}},
		{"nodeagent-csi", rule{resources: []string{"configmaps"}, verbs: []string{"update"}}},
		{"nodeagent-analyze", rule{resources: []string{"pods"}, verbs: []string{"list", "delete"}}},
		{"nodeagent-analyze", rule{resources: []string{"secrets"}, verbs: []string{"list"}}},
		{"nodeagent-analyze-events", rule{resources: []string{"pods"}, verbs: []string{"patch"}}},
		{"nodeagent-webhook", rule{resources: []string{"secrets"}, verbs: []string{"update"}}},
		{"nodeagent-webhook", rule{resources: []string{"pods"}, verbs: []string{"create"}}},
	} {
		if beyondPromise(c.role, c.rule) == "" {
			t.Errorf("%s: %+v passed", c.role, c.rule)
		}
	}
}
