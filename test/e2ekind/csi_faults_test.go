//go:build e2e

package e2ekind

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"
)

// csiPod is a pod on node with the driver's volumes of attrs, one per
// entry, each mounted at /mnt/<volume>.
func csiPod(name, node string, attrs map[string]map[string]string) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{Name: "app", Image: podImage}}},
	}
	for volume, a := range attrs {
		pod.Spec.Volumes = append(pod.Spec.Volumes, driverVolume(volume, a))
		pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
			corev1.VolumeMount{Name: volume, MountPath: "/mnt/" + volume})
	}
	return pod
}

// driverVolume is a read-only volume of the driver with attrs.
func driverVolume(name string, attrs map[string]string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: csiDriver, ReadOnly: ptr.To(true), VolumeAttributes: attrs}}}
}

func mustCreate(t *testing.T, ns string, objs ...any) {
	t.Helper()
	ctx := context.Background()
	for _, o := range objs {
		var err error
		switch o := o.(type) {
		case *corev1.Pod:
			_, err = clientset.CoreV1().Pods(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ConfigMap:
			_, err = clientset.CoreV1().ConfigMaps(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.Secret:
			_, err = clientset.CoreV1().Secrets(ns).Create(ctx, o, metav1.CreateOptions{})
		case *corev1.ServiceAccount:
			_, err = clientset.CoreV1().ServiceAccounts(ns).Create(ctx, o, metav1.CreateOptions{})
		case *appsv1.Deployment:
			_, err = clientset.AppsV1().Deployments(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.Role:
			_, err = clientset.RbacV1().Roles(ns).Create(ctx, o, metav1.CreateOptions{})
		case *rbacv1.RoleBinding:
			_, err = clientset.RbacV1().RoleBindings(ns).Create(ctx, o, metav1.CreateOptions{})
		default:
			t.Fatalf("mustCreate creates no %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// inContainer waits until the container of pod name holds want at path.
func inContainer(t *testing.T, ns, name, path, want string, within time.Duration) {
	t.Helper()
	view := viewContainer(t, waitRunning(t, ns, name))
	eventually(t, within, name+":"+path, func() string {
		out, err := nodeExec(view.node, "cat", "/proc/"+view.pid+"/root"+path)
		if got := string(out); err != nil || got != want {
			return fmt.Sprintf("holds %q (%v), want %q", got, err, want)
		}
		return ""
	})
}

// csiImmutableRecreated: an immutable ConfigMap deleted and recreated with
// new content reaches every container of the driver's volumes, where the
// kubelet, which stops watching immutable objects, keeps the old content
// (kubernetes#131589).
func csiImmutableRecreated(t *testing.T) {
	ctx := context.Background()
	ns := testNamespace(t, "e2e-kind-csi-immutable")
	t.Cleanup(func() { deletePods(t, ns) })
	frozen := func(v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Immutable: ptr.To(true), Data: map[string]string{"k": v}}
	}
	mustCreate(t, ns, frozen("v1"))
	workers := clusterNodes(t)[1:]
	for _, node := range workers {
		mustCreate(t, ns, csiPod("csi-"+node, node, map[string]map[string]string{"frozen": {"configMap": "frozen"}}))
	}
	for _, node := range workers {
		inContainer(t, ns, "csi-"+node, "/mnt/frozen/k", "v1", time.Minute)
	}
	if err := clientset.CoreV1().ConfigMaps(ns).Delete(ctx, "frozen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, ns, frozen("v2"))
	for _, node := range workers {
		inContainer(t, ns, "csi-"+node, "/mnt/frozen/k", "v2", 10*time.Second)
	}
}

// podEvents returns the messages of pod name's events, joined.
func podEvents(t *testing.T, ns, name string) string {
	t.Helper()
	list, err := clientset.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	if err != nil {
		t.Fatal(err)
	}
	var msgs []string
	for _, e := range list.Items {
		msgs = append(msgs, e.Reason+": "+e.Message)
	}
	return strings.Join(msgs, "\n")
}

// csiBadInput: each mistake in a pod's volume keeps that pod in
// ContainerCreating with an event that says what is wrong, as the kubelet's
// events do; a missing ConfigMap's pod starts once it exists; a ConfigMap
// of nearly 1 MiB is served whole.
func csiBadInput(t *testing.T) {
	ns := testNamespace(t, "e2e-kind-csi-bad")
	t.Cleanup(func() { deletePods(t, ns) })
	node := clusterNodes(t)[1]
	big := strings.Repeat("x", 1000*1024)
	mustCreate(t, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "present"}, Data: map[string]string{"a": "1"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big"}, Data: map[string]string{"big": big}})
	bad := map[string]struct {
		attrs map[string]string
		says  string
	}{
		"missing":         {map[string]string{"configMap": "absent"}, `configmaps "absent" not found`},
		"other-namespace": {map[string]string{"configMap": "present", "namespace": "kube-system"}, `"namespace" is not supported`},
		"slash":           {map[string]string{"configMap": "kube-system/present"}, "a ConfigMap name has no slash"},
		"bad-items":       {map[string]string{"configMap": "present", "items": `[{"key":`}, "is not a JSON list"},
		"no-such-key":     {map[string]string{"configMap": "present", "items": `[{"key":"b","path":"b"}]`}, `has no key "b"`},
		"escape":          {map[string]string{"configMap": "present", "items": `[{"key":"a","path":"../a"}]`}, "must not contain '..'"},
		"bad-mode":        {map[string]string{"configMap": "present", "defaultMode": "0999"}, "want an octal mode"},
		"unknown":         {map[string]string{"configMap": "present", "configmap": "present"}, `unknown attribute "configmap"`},
	}
	for name, b := range bad {
		mustCreate(t, ns, csiPod(name, node, map[string]map[string]string{"config": b.attrs}))
	}
	mustCreate(t, ns, csiPod("big", node, map[string]map[string]string{"config": {"configMap": "big"}}))
	for name, b := range bad {
		eventually(t, 2*time.Minute, name+"'s events", func() string {
			if events := podEvents(t, ns, name); !strings.Contains(events, "FailedMount") || !strings.Contains(events, b.says) {
				return fmt.Sprintf("events %q, want a FailedMount that says %q", events, b.says)
			}
			return ""
		})
		pod, err := clientset.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil || pod.Status.Phase != corev1.PodPending {
			t.Errorf("pod %s: %v, %v; want Pending", name, pod.Status.Phase, err)
		}
	}
	inContainer(t, ns, "big", "/mnt/config/big", big, time.Minute)
	mustCreate(t, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "absent"}, Data: map[string]string{"now": "here"}})
	inContainer(t, ns, "missing", "/mnt/config/now", "here", 3*time.Minute)
}

// csiRestart: the driver killed (grace period 0) on a node with a pod's
// volumes keeps serving them once its DaemonSet has replaced it: an update
// made after reaches the container, in place and atomically, and the pod's
// deletion unpublishes the volumes the new driver never published.
func csiRestart(t *testing.T) {
	ctx := context.Background()
	ns := testNamespace(t, "e2e-kind-csi-restart")
	t.Cleanup(func() { deletePods(t, ns) })
	node := clusterNodes(t)[1]
	mustCreate(t, ns, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Data: map[string]string{"k": "v1"}},
		csiPod("app", node, map[string]map[string]string{
			"atomic": {"configMap": "live"}, "inplace": {"configMap": "live", "updates": "inPlace"}}))
	inContainer(t, ns, "app", "/mnt/atomic/k", "v1", time.Minute)
	app := waitRunning(t, ns, "app")

	drivers, err := clientset.CoreV1().Pods(csiNamespace).List(ctx, metav1.ListOptions{
		LabelSelector: csiDriverPods, FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
	if err != nil || len(drivers.Items) != 1 {
		t.Fatalf("the driver's pod on %s: %d pods, %v", node, len(drivers.Items), err)
	}
	old := drivers.Items[0].Name
	if err := clientset.CoreV1().Pods(csiNamespace).Delete(ctx, old, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "a new driver ready on "+node, func() string {
		list, err := clientset.CoreV1().Pods(csiNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: csiDriverPods, FieldSelector: fields.OneTermEqualSelector("spec.nodeName", node).String()})
		if err != nil {
			return err.Error()
		}
		for _, p := range list.Items {
			if p.Name != old && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].Ready {
				return ""
			}
		}
		return "not yet"
	})
	cm, err := clientset.CoreV1().ConfigMaps(ns).Get(ctx, "live", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "v2"
	if _, err := clientset.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	inContainer(t, ns, "app", "/mnt/atomic/k", "v2", 10*time.Second)
	inContainer(t, ns, "app", "/mnt/inplace/k", "v2", 10*time.Second)

	if err := clientset.CoreV1().Pods(ns).Delete(ctx, "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 2*time.Minute, "the pod gone and its volumes with it", func() string {
		if _, err := clientset.CoreV1().Pods(ns).Get(ctx, "app", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("the pod is still there (%v)", err)
		}
		if dir := "/var/lib/kubelet/pods/" + string(app.UID); exists(node, dir) {
			return dir + " is still on the node"
		}
		return ""
	})
}
