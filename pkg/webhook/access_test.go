package webhook

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"

	"github.com/nodeagent-io/nodeagent/pkg/accessreview"
)

// fakeAccess allows what may lists, as "resource/name" per verb, and
// records what it was asked.
type fakeAccess struct {
	may   map[string]bool
	fail  error
	asked []string
}

func (f *fakeAccess) May(_ context.Context, account accessreview.ServiceAccount, resource, name string, verbs ...string) error {
	for _, verb := range verbs {
		f.asked = append(f.asked, account.Namespace+"/"+account.Name+" "+verb+" "+resource+"/"+name)
		if f.fail != nil {
			return f.fail
		}
		if !f.may[verb+" "+resource+"/"+name] {
			return &accessreview.DeniedError{Account: account, Verb: verb, Resource: resource, Name: name, Reason: "no RBAC rule allows it"}
		}
	}
	return nil
}

// For a driver that reads as the pods, a volume is converted only when the
// pod's service account may get, list and watch each object it reads;
// otherwise the kubelet keeps it and the warning names the check. A check
// that fails keeps the volume with the kubelet too.
func TestVolumesThePodMayNotReadStayWithTheKubelet(t *testing.T) {
	pod := testPod(nil)
	pod.Spec.ServiceAccountName = "web"
	pod.Spec.Volumes = pod.Spec.Volumes[:1] // conf, of the ConfigMap nginx
	for _, tc := range []struct {
		name      string
		access    *fakeAccess
		converted bool
		warning   string
	}{
		{"granted", &fakeAccess{may: map[string]bool{"get configmaps/nginx": true, "list configmaps/nginx": true, "watch configmaps/nginx": true}}, true, ""},
		{"no watch", &fakeAccess{may: map[string]bool{"get configmaps/nginx": true, "list configmaps/nginx": true}}, false,
			`service account shop/web may not watch configmap "nginx" (no RBAC rule allows it); check with: kubectl auth can-i watch configmaps/nginx -n shop --as=system:serviceaccount:shop:web`},
		{"the check fails", &fakeAccess{fail: errors.New("the apiserver is away")}, false, "could not be checked (the apiserver is away)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, got := review(t, &Handler{Namespace: "nodeagent", Access: tc.access}, "shop", admissionv1.Create, pod)
			if converted := got.Spec.Volumes[0].CSI != nil; converted != tc.converted {
				t.Errorf("converted %v, want %v (warnings %q)", converted, tc.converted, resp.Warnings)
			}
			if tc.warning != "" && (len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], tc.warning)) {
				t.Errorf("warnings %q, want one with %q", resp.Warnings, tc.warning)
			}
			if tc.converted && len(resp.Warnings) > 0 {
				t.Errorf("warnings %q on a converted volume", resp.Warnings)
			}
			if len(tc.access.asked) == 0 || !strings.HasPrefix(tc.access.asked[0], "shop/web get configmaps/nginx") {
				t.Errorf("asked %q", tc.access.asked)
			}
		})
	}
}
