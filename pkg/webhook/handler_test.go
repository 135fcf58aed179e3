package webhook

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

func testPod(annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{GenerateName: "web-", Namespace: "shop", Annotations: annotations},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "nginx", VolumeMounts: []corev1.VolumeMount{
				{Name: "conf", MountPath: "/etc/nginx/nginx.conf", SubPath: "nginx.conf"}, {Name: "site", MountPath: "/srv"}}}},
			Volumes: []corev1.Volume{
				{Name: "conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "nginx"}}}},
				{Name: "site", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}}, // no name: the driver would refuse it
				{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}},
			},
		},
	}
}

func review(t *testing.T, h *Handler, namespace string, op admissionv1.Operation, pod *corev1.Pod) (*admissionv1.AdmissionResponse, *corev1.Pod) {
	t.Helper()
	raw, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	resp, patched := reviewRaw(t, h, namespace, op, raw)
	if resp.Patch == nil {
		return resp, pod
	}
	var result corev1.Pod
	if err := json.Unmarshal(patched, &result); err != nil {
		t.Fatal(err)
	}
	return resp, &result
}

// reviewRaw sends the pod raw, as an apiserver would, and returns the
// response and the pod as the response's patch leaves it.
func reviewRaw(t *testing.T, h *Handler, namespace string, op admissionv1.Operation, raw []byte) (*admissionv1.AdmissionResponse, []byte) {
	t.Helper()
	body, _ := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "u-1", Operation: op, Namespace: namespace,
			Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, Object: runtime.RawExtension{Raw: raw}},
	})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", bytes.NewReader(body)))
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal(rec.Body.Bytes(), &out); err != nil || out.Response == nil {
		t.Fatalf("response %d %q: %v", rec.Code, rec.Body.String(), err)
	}
	if out.Response.UID != "u-1" || !out.Response.Allowed {
		t.Fatalf("response %+v: want the request's UID, allowed", out.Response)
	}
	if out.Response.Patch == nil {
		return out.Response, raw
	}
	patch, err := jsonpatch.DecodePatch(out.Response.Patch)
	if err != nil {
		t.Fatal(err)
	}
	patched, err := patch.Apply(raw)
	if err != nil {
		t.Fatalf("the patch %s does not apply: %v", out.Response.Patch, err)
	}
	return out.Response, patched
}

// A new pod in an opted-in namespace: its configMap volume is the driver's
// (inPlace, for its subPath), the one the driver would refuse stays with
// a warning, the Secret stays, and the pod says which were converted.
func TestAPodIsConverted(t *testing.T) {
	h := &Handler{Namespace: "nodeagent"}
	for _, annotations := range []map[string]string{nil, {"team": "web"}} {
		resp, pod := review(t, h, "shop", admissionv1.Create, testPod(annotations))
		refs := podrefs.Of(pod)
		if len(refs.DriverVolumes) != 1 || refs.DriverVolumes[0].Name != "conf" || !refs.DriverVolumes[0].InPlace {
			t.Errorf("driver volumes %+v, want conf, inPlace", refs.DriverVolumes)
		}
		if pod.Spec.Volumes[1].ConfigMap == nil || pod.Spec.Volumes[2].Secret == nil {
			t.Errorf("volumes left: %+v", pod.Spec.Volumes[1:])
		}
		if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], "volume site is served by the kubelet") {
			t.Errorf("warnings %q", resp.Warnings)
		}
		if pod.Annotations[ConvertedAnnotation] != "conf" || annotations != nil && pod.Annotations["team"] != "web" {
			t.Errorf("annotations %v", pod.Annotations)
		}
	}
}

// Untouched: kube-system, the webhook's namespace, a pod that opts out, and
// anything but a pod's creation.
func TestWhatIsNeverTouched(t *testing.T) {
	h := &Handler{Namespace: "nodeagent"}
	for _, tc := range []struct {
		name, namespace string
		op              admissionv1.Operation
		pod             *corev1.Pod
	}{
		{"kube-system", "kube-system", admissionv1.Create, testPod(nil)},
		{"its own namespace", "nodeagent", admissionv1.Create, testPod(nil)},
		{"opted out", "shop", admissionv1.Create, testPod(map[string]string{ServeLabel: ServeDisabled})},
		{"an update", "shop", admissionv1.Update, testPod(nil)},
	} {
		resp, _ := review(t, h, tc.namespace, tc.op, tc.pod)
		if resp.Patch != nil || len(resp.Warnings) > 0 {
			t.Errorf("%s: patched %s, warnings %q", tc.name, resp.Patch, resp.Warnings)
		}
	}
}

// A request that is not an AdmissionReview is a client error.
func TestBadRequests(t *testing.T) {
	h := &Handler{}
	for _, body := range []string{"", "{}", "not json"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/convert", strings.NewReader(body)))
		if rec.Code != http.StatusBadRequest {
			t.Errorf("body %q: %d", body, rec.Code)
		}
	}
}

// A pod from an apiserver newer than this build: its volumes carry fields
// k8s.io/api does not know. The configMap volume without one is converted;
// the configMap volume with one stays, with a warning naming the field; the
// other volumes come back exactly as they were sent, unknown fields and all.
func TestFieldsTheLibraryDoesNotKnowAreKept(t *testing.T) {
	const raw = `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"},"spec":{
"containers":[{"name":"c","image":"i","volumeMounts":[{"name":"plain","mountPath":"/a"},{"name":"owned","mountPath":"/b"}]}],
"volumes":[
 {"name":"plain","configMap":{"name":"app"}},
 {"name":"owned","configMap":{"name":"app","futureOwner":1000,"items":[{"key":"k","path":"k","futureItemOwner":7}]}},
 {"name":"certs","secret":{"secretName":"tls","futureOwner":1000}},
 {"name":"scratch","emptyDir":{},"futureVolumeField":true}]}}`
	resp, patched := reviewRaw(t, &Handler{Namespace: "nodeagent"}, "shop", admissionv1.Create, []byte(raw))
	var before, after struct {
		Metadata struct{ Annotations map[string]string }
		Spec     struct{ Volumes []json.RawMessage }
	}
	if err := json.Unmarshal([]byte(raw), &before); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(patched, &after); err != nil {
		t.Fatal(err)
	}
	if len(after.Spec.Volumes) != 4 {
		t.Fatalf("volumes after the patch: %s", after.Spec.Volumes)
	}
	var plain corev1.Volume
	if err := json.Unmarshal(after.Spec.Volumes[0], &plain); err != nil || plain.CSI == nil || plain.CSI.Driver != podrefs.DriverName {
		t.Errorf("volume plain became %s, want the driver's (%v)", after.Spec.Volumes[0], err)
	}
	for i := 1; i < 4; i++ {
		if !jsonEqual(t, before.Spec.Volumes[i], after.Spec.Volumes[i]) {
			t.Errorf("volume %d was sent as %s and patched into %s", i, before.Spec.Volumes[i], after.Spec.Volumes[i])
		}
	}
	want := "volume owned is served by the kubelet, not the driver: it sets configMap.futureOwner, configMap.items[0].futureItemOwner"
	if len(resp.Warnings) != 1 || !strings.Contains(resp.Warnings[0], want) {
		t.Errorf("warnings %q, want one that says %q", resp.Warnings, want)
	}
	if after.Metadata.Annotations[ConvertedAnnotation] != "plain" {
		t.Errorf("annotations %v, want %s=plain", after.Metadata.Annotations, ConvertedAnnotation)
	}
}

// jsonEqual compares two JSON documents by their values.
func jsonEqual(t *testing.T, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}

// In the Secrets mode the secret volume is the driver's too, read back as
// the same Secret.
func TestSecretsModeConvertsSecretVolumes(t *testing.T) {
	h := &Handler{Namespace: "nodeagent", Secrets: true}
	sent := testPod(nil)
	sent.Spec.Containers[0].VolumeMounts = append(sent.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "certs", MountPath: "/etc/tls"})
	_, pod := review(t, h, "shop", admissionv1.Create, sent)
	refs := podrefs.Of(pod)
	var names []string
	for _, v := range refs.DriverVolumes {
		names = append(names, v.Name)
		if v.Name == "certs" && (len(v.Reads) != 1 || v.Reads[0].Kind != model.Secret || v.Reads[0].Name != "tls") {
			t.Errorf("certs reads %+v, want Secret tls", v.Reads)
		}
	}
	if strings.Join(names, ",") != "conf,certs" || pod.Annotations[ConvertedAnnotation] != "certs,conf" {
		t.Errorf("driver volumes %v, converted %q; want conf and certs", names, pod.Annotations[ConvertedAnnotation])
	}
}
