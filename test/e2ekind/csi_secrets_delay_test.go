//go:build e2e

package e2ekind

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/test/e2eutil"
)

// The Secrets mode's update-delay run: secretDelayObjects Secrets and as
// many ConfigMaps, each updated every secretDelayMeanGap on average over
// secretDelayWindow (about 150 updates of each kind), read by one pod on
// each worker through a secret volume of each Secret and a projected
// volume of each pair.
const (
	secretDelayObjects = 3
	secretDelayWindow  = 20 * time.Second
	secretDelayMeanGap = 400 * time.Millisecond
)

// secretDelayRows measures the Secrets mode's update delays, as
// csiBesideKubelet measures the ConfigMap volumes': each Secret's update
// in its secret volumes and in the projected volumes that read it, each
// ConfigMap's in its projected volumes. It returns the two rows of the
// docs' table, each held to the driver's goal.
func secretDelayRows(t *testing.T, ns string) [][]string {
	t.Helper()
	var names []string
	for i := range secretDelayObjects {
		name := fmt.Sprintf("delay-%d", i)
		names = append(names, name)
		mustCreate(t, ns, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string][]byte{e2eutil.DelayValueKey: []byte("0")}},
			&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{e2eutil.DelayValueKey: "0"}})
	}
	mustCreate(t, ns, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "delays"}})
	e2eutil.GrantReads(t, clientset, ns, "delays", "secrets", names...)
	e2eutil.GrantReads(t, clientset, ns, "delays", "configmaps", names...)
	var secretFiles, configMapFiles []e2eutil.DelayFile
	for _, node := range clusterNodes(t)[1:] {
		pod := secretDelayPod(t, node, names)
		mustCreate(t, ns, pod)
		root := viewContainer(t, waitRunning(t, ns, pod.Name)).rootFromHost(t)
		for i, name := range names {
			secretFiles = append(secretFiles,
				e2eutil.DelayFile{Group: "secret", Object: i, Path: filepath.Join(root, "etc/secret", name, e2eutil.DelayValueKey)},
				e2eutil.DelayFile{Group: "projected", Object: i, Path: filepath.Join(root, "etc/projected", name, "secret-"+e2eutil.DelayValueKey)})
			configMapFiles = append(configMapFiles,
				e2eutil.DelayFile{Group: "projected", Object: i, Path: filepath.Join(root, "etc/projected", name, "configmap-"+e2eutil.DelayValueKey)})
		}
	}
	secrets := e2eutil.DelayRun{Client: clientset, Namespace: ns, Objects: names, Secrets: true,
		Window: secretDelayWindow, MeanGap: secretDelayMeanGap, Poll: csiPoll, Longest: 10 * time.Second}
	configMaps := secrets
	configMaps.Secrets = false
	var fromSecrets, fromConfigMaps map[string][]float64
	var notified [2]map[string]float64
	var g errgroup.Group
	g.Go(func() (err error) {
		fromSecrets, notified[0], err = secrets.Measure(context.Background(), secretFiles)
		return err
	})
	g.Go(func() (err error) {
		fromConfigMaps, notified[1], err = configMaps.Measure(context.Background(), configMapFiles)
		return err
	})
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	for i, kind := range []string{"Secret", "ConfigMap"} {
		for _, key := range slices.Sorted(maps.Keys(notified[i])) {
			t.Logf("%s %s: %.0f %% of the delays measured by a read that inotify prompted, the rest by the %s poll", kind, key, 100*notified[i][key], csiPoll)
		}
	}
	sentSecrets, sentConfigMaps := secrets.Sent(t), configMaps.Sent(t)
	return [][]string{
		driverDelayRow(t, "the driver, secret volumes (Secrets mode)", fromSecrets["secret"], sentSecrets),
		driverDelayRow(t, "the driver, projected volumes of a ConfigMap and a Secret (Secrets mode)",
			append(fromSecrets["projected"], fromConfigMaps["projected"]...), sentSecrets+sentConfigMaps),
	}
}

// secretDelayPod reads each of names through the driver: a secret volume
// at /etc/secret/NAME, and a projected volume at /etc/projected/NAME of the
// ConfigMap's value as configmap-value and the Secret's as secret-value.
func secretDelayPod(t *testing.T, node string, names []string) *corev1.Pod {
	t.Helper()
	pod := csiPod("delays-"+node, node, nil)
	pod.Spec.ServiceAccountName = "delays"
	for _, name := range names {
		// Files at the volume's top, where the atomic writer's rename of
		// ..data is that inotify reports (a nested file's directory is a
		// generation's, which the writer replaces without an event in it).
		item := func(source string) []corev1.KeyToPath {
			return []corev1.KeyToPath{{Key: e2eutil.DelayValueKey, Path: source + "-" + e2eutil.DelayValueKey}}
		}
		sources, err := json.Marshal([]corev1.VolumeProjection{
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: item("configmap")}},
			{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Items: item("secret")}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []struct{ dir, attr, value string }{{"secret", "secret", name}, {"projected", "sources", string(sources)}} {
			volume := v.dir + "-" + name
			pod.Spec.Volumes = append(pod.Spec.Volumes, driverVolume(volume, map[string]string{v.attr: v.value}))
			pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts,
				corev1.VolumeMount{Name: volume, MountPath: filepath.Join("/etc", v.dir, name)})
		}
	}
	return pod
}
