//go:build e2e

package e2ekind

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/webhook"
)

// admissionGap is how often admissions sends a pod through the webhook.
const admissionGap = 500 * time.Millisecond

// admissions sends a pod through admission every admissionGap, as a
// server-side dry run (the webhook declares no side effects, so the
// apiserver calls it as for a real pod, and nothing is left to delete),
// and reads the webhook's Secret each time: what it counts shows whether
// every pod was converted while the webhook renewed its CA and its
// certificate.
type admissions struct {
	ns   string
	done chan struct{}
	wg   sync.WaitGroup

	mu                              sync.Mutex
	converted, unconverted, refused int
	// cas and certs are the distinct CAs and serving certificates the
	// Secret held, by digest.
	cas, certs map[[32]byte]bool
	errors     []string
	// unconvertedAt says when each unconverted pod was admitted, since
	// the start, with the renewals seen by then: whether they meet a
	// renewal is what a failure needs to know.
	unconvertedAt []string
	start         time.Time
}

// startAdmissions starts sending pods into ns.
func startAdmissions(ns string) *admissions {
	a := &admissions{ns: ns, done: make(chan struct{}), cas: map[[32]byte]bool{}, certs: map[[32]byte]bool{}, start: time.Now()}
	a.wg.Go(a.run)
	return a
}

// stop stops the admissions and returns what they counted.
func (a *admissions) stop() *admissions {
	close(a.done)
	a.wg.Wait()
	return a
}

// renewals counts the CAs and the serving certificates seen so far.
func (a *admissions) renewals() (cas, certs int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.cas), len(a.certs)
}

func (a *admissions) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return fmt.Sprintf("%d converted, %d unconverted %v, %d refused (%v), %d CAs, %d certificates",
		a.converted, a.unconverted, a.unconvertedAt, a.refused, a.errors, len(a.cas), len(a.certs))
}

func (a *admissions) run() {
	ctx := context.Background()
	for i := 0; ; i++ {
		select {
		case <-a.done:
			return
		case <-time.After(admissionGap):
		}
		s, secretErr := clientset.CoreV1().Secrets(csiNamespace).Get(ctx, webhookSecret, metav1.GetOptions{})
		pod, err := clientset.CoreV1().Pods(a.ns).Create(ctx, admissionPod(i), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		a.mu.Lock()
		if secretErr == nil {
			a.cas[sha256.Sum256(s.Data[webhook.SecretCACert])] = true
			a.certs[sha256.Sum256(s.Data[webhook.SecretCert])] = true
		}
		switch {
		case err != nil:
			a.refused++
			a.errors = append(a.errors, err.Error())
		case pod.Annotations[podrefs.ConvertedAnnotation] == "":
			a.unconverted++
			a.unconvertedAt = append(a.unconvertedAt, fmt.Sprintf("pod %d at +%s (%d CAs, %d certificates seen)",
				i, time.Since(a.start).Round(10*time.Millisecond), len(a.cas), len(a.certs)))
		default:
			a.converted++
		}
		a.mu.Unlock()
	}
}

// admissionPod is a pod that mounts the chart's configuration, as its own
// pods do.
func admissionPod(i int) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("admitted-", i)},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: podImage, VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}}}},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: webappRelease + "-config"}, DefaultMode: ptr.To[int32](0o644)}}}},
		},
	}
}
