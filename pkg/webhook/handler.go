// Package webhook is nodeagent's opt-in mutating admission webhook for
// pods: it converts a new pod's configMap volumes into volumes of the CSI
// driver configmaps.nodeagent.io (pkg/convert), so that workloads nobody
// edits get their configuration updates, subPath mounts included
// (docs/csi.md, "Without editing workloads").
//
// Contract:
//
//   - AdmissionReview v1 for the CREATE of pods; any other request is
//     allowed unchanged. The response always allows the pod: the webhook
//     changes volumes, it never refuses a pod.
//   - Touched only where asked: a namespace opts in with the label
//     configmaps.nodeagent.io/serve=enabled (the configuration's
//     namespaceSelector decides; the handler does not read namespaces),
//     and a pod opts out with the annotation
//     configmaps.nodeagent.io/serve: disabled. kube-system and the
//     webhook's own namespace are never touched, by the configuration's
//     selector and by the handler.
//   - A converted pod gets a JSONPatch that replaces each converted volume
//     by its index, and no other, and adds the annotation
//     configmaps.nodeagent.io/converted, the volumes converted; a
//     configMap volume left as it was comes back as a warning that kubectl
//     shows, with the reason. A volume that carries a field this build's
//     k8s.io/api does not know (a newer apiserver's) is left as it was:
//     converting it would drop the field, and the warning names it.
//   - For a driver that reads as the pods (Handler.Access), a volume whose
//     objects the pod's service account may not get, list and watch is
//     left as it was, with a warning that names the check: converted, the
//     pod would wait for a volume the driver refuses.
package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// The webhook's label and annotations (podrefs, which analyze reads too).
const (
	// ServeLabel opts a namespace in (ServeEnabled) and, as an annotation,
	// a pod out (ServeDisabled).
	ServeLabel    = podrefs.ServeLabel
	ServeEnabled  = podrefs.ServeEnabled
	ServeDisabled = podrefs.ServeDisabled
	// ConvertedAnnotation lists, comma-separated, the volumes of a pod
	// the webhook converted.
	ConvertedAnnotation = podrefs.ConvertedAnnotation
)

// maxReviewBytes bounds a request body: the apiserver's own limit on an
// object is 3 MiB.
const maxReviewBytes = 8 << 20

// Handler serves AdmissionReviews.
type Handler struct {
	// Namespace is the webhook's own, never touched.
	Namespace string
	// Secrets converts secret volumes, and projected volumes of configMap
	// and secret sources, too: for a driver in its Secrets mode.
	Secrets bool
	// Access, where set, is asked whether the pod's service account may
	// read each object of a volume before it is converted: for a driver
	// that reads as the pods (keepUnreadable). Nil converts without asking.
	Access AccessChecker
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST an AdmissionReview", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxReviewBytes))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, fmt.Sprintf("not an AdmissionReview with a request: %v", err), http.StatusBadRequest)
		return
	}
	review.Response = h.Review(r.Context(), review.Request)
	review.Response.UID = review.Request.UID
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(&review); err != nil {
		klog.ErrorS(err, "Writing an admission response failed")
	}
}

// Review decides one admission request: always allowed, patched when the
// pod's volumes were converted.
func (h *Handler) Review(ctx context.Context, req *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
	allow := &admissionv1.AdmissionResponse{Allowed: true}
	if req.Operation != admissionv1.Create || req.Resource != (metav1.GroupVersionResource{Version: "v1", Resource: "pods"}) || req.SubResource != "" {
		return allow
	}
	if req.Namespace == metav1.NamespaceSystem || req.Namespace == h.Namespace {
		return allow
	}
	var pod corev1.Pod
	if err := json.Unmarshal(req.Object.Raw, &pod); err != nil {
		allow.Warnings = []string{fmt.Sprintf("%s: the pod could not be read (%v); admitted unconverted", ServeLabel, err)}
		return allow
	}
	if pod.Annotations[ServeLabel] == ServeDisabled {
		return allow
	}
	decisions, err := plan(&pod, req.Object.Raw, convert.Options{Secrets: h.Secrets})
	if err != nil {
		allow.Warnings = []string{fmt.Sprintf("%s: the pod's volumes could not be read (%v); admitted unconverted", ServeLabel, err)}
		return allow
	}
	// Warnings for what the plan left, then for what the pod may not read
	// (which the plan had converted).
	allow.Warnings = warnings(decisions)
	allow.Warnings = append(allow.Warnings, h.keepUnreadable(ctx, &pod, req.Namespace, decisions)...)
	patch, converted, err := volumesPatch(&pod, decisions)
	if err != nil {
		allow.Warnings = append(allow.Warnings, fmt.Sprintf("%s: %v; admitted unconverted", ServeLabel, err))
		return allow
	}
	if patch == nil {
		return allow
	}
	patchType := admissionv1.PatchTypeJSONPatch
	allow.Patch, allow.PatchType = patch, &patchType
	klog.V(2).InfoS("Converted a pod's configMap volumes", "pod", klog.KRef(req.Namespace, podName(&pod)), "volumes", converted)
	return allow
}

// plan decides what becomes of each of the pod's volumes, and leaves as it
// is every volume whose JSON in raw, the pod as the apiserver sent it,
// carries a field k8s.io/api does not know (convert.KeepUnknown).
func plan(pod *corev1.Pod, raw []byte, opts convert.Options) ([]convert.Decision, error) {
	var asSent struct {
		Spec struct {
			Volumes []json.RawMessage `json:"volumes"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &asSent); err != nil {
		return nil, err
	}
	if len(asSent.Spec.Volumes) != len(pod.Spec.Volumes) {
		return nil, fmt.Errorf("%d volumes sent, %d decoded", len(asSent.Spec.Volumes), len(pod.Spec.Volumes))
	}
	decisions := convert.PlanWith(&pod.Spec, opts)
	for i := range decisions {
		if err := convert.KeepUnknown(&decisions[i], asSent.Spec.Volumes[i]); err != nil {
			return nil, fmt.Errorf("volume %s: %w", decisions[i].Volume, err)
		}
	}
	return decisions, nil
}

// warnings says, for each configMap volume left as it was, why.
func warnings(decisions []convert.Decision) []string {
	var out []string
	for _, d := range decisions {
		if d.ConfigMap && !d.Converted {
			out = append(out, fmt.Sprintf("%s: volume %s is served by the kubelet, not the driver: %s", ServeLabel, d.Volume, d.Reason))
		}
	}
	return out
}

// jsonPatchOp is one operation of an RFC 6902 JSON patch.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value"`
}

// volumesPatch replaces, by index, each volume the decisions convert, and
// records which were converted. Every other volume is left out of the
// patch: the apiserver keeps it as it was sent, with any field this build
// does not know. No volume converted: no patch.
func volumesPatch(pod *corev1.Pod, decisions []convert.Decision) (patch []byte, converted []string, err error) {
	var ops []jsonPatchOp
	for i, d := range decisions {
		if d.Converted {
			ops = append(ops, jsonPatchOp{Op: "replace", Path: fmt.Sprintf("/spec/volumes/%d", i), Value: d.DriverVolume(pod.Spec.Volumes[i].Name)})
			converted = append(converted, d.Volume)
		}
	}
	if len(ops) == 0 {
		return nil, nil, nil
	}
	value := strings.Join(slices.Sorted(slices.Values(converted)), ",")
	if pod.Annotations == nil {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations", Value: map[string]string{ConvertedAnnotation: value}})
	} else {
		ops = append(ops, jsonPatchOp{Op: "add", Path: "/metadata/annotations/" + escapePointer(ConvertedAnnotation), Value: value})
	}
	patch, err = json.Marshal(ops)
	return patch, converted, err
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}

// podName is the pod's name, or its generateName for a pod a controller
// creates.
func podName(pod *corev1.Pod) string {
	if pod.Name != "" {
		return pod.Name
	}
	return pod.GenerateName
}
