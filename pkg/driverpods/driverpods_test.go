package driverpods

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const driver = "configmaps.nodeagent.io"

// pages serves its pods two to a page, as an apiserver does with a limit.
type pages struct {
	pods  []corev1.Pod
	calls int
}

func (p *pages) List(_ context.Context, opts metav1.ListOptions) (*corev1.PodList, error) {
	p.calls++
	start := 0
	if opts.Continue != "" {
		if err := json.Unmarshal([]byte(opts.Continue), &start); err != nil {
			return nil, err
		}
	}
	end := min(start+2, len(p.pods))
	list := &corev1.PodList{Items: p.pods[start:end]}
	if end < len(p.pods) {
		next, _ := json.Marshal(end)
		list.Continue = string(next)
	}
	return list, nil
}

func pod(name string, phase corev1.PodPhase, deleting bool, volumes ...corev1.VolumeSource) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name}, Spec: corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1_800_000_000, 0)}
	}
	for i, v := range volumes {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: string(rune('a' + i)), VolumeSource: v})
	}
	return p
}

var (
	ours      = corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: driver}}
	another   = corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "secrets-store.csi.k8s.io"}}
	configMap = corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}
)

// cluster holds a pod of each kind; the names of those that need the
// driver start with "needs".
func cluster() []corev1.Pod {
	return []corev1.Pod{
		pod("needs-running", corev1.PodRunning, false, configMap, ours),
		pod("other-driver", corev1.PodRunning, false, another),
		pod("needs-pending", corev1.PodPending, false, ours),
		pod("kubelet-only", corev1.PodRunning, false, configMap),
		pod("finished", corev1.PodSucceeded, false, ours),
		pod("failed", corev1.PodFailed, false, ours),
		pod("needs-failed-and-deleting", corev1.PodFailed, true, ours),
		pod("needs-terminating", corev1.PodRunning, true, ours),
	}
}

func TestUsingFindsThePodsThatNeedTheDriver(t *testing.T) {
	lister := &pages{pods: cluster()}
	using, err := Using(context.Background(), lister, driver)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range using {
		got = append(got, p.Name)
	}
	want := []string{"needs-running", "needs-pending", "needs-failed-and-deleting", "needs-terminating"}
	if !slices.Equal(got, want) {
		t.Errorf("pods that need the driver: %v, want %v", got, want)
	}
	if lister.calls != 4 {
		t.Errorf("%d list calls for 8 pods two to a page, want 4", lister.calls)
	}
	if s := using[3].String(); s != "shop/needs-terminating on node node-1 (terminating)" {
		t.Errorf("a terminating pod reads %q", s)
	}
}

func TestCheckNamesThePodsAndTheCommand(t *testing.T) {
	if err := Check(context.Background(), &pages{pods: cluster()[1:2]}, driver); err != nil {
		t.Fatalf("no pod uses the driver: %v", err)
	}
	var many []corev1.Pod
	for range 25 {
		many = append(many, cluster()[0])
	}
	err := Check(context.Background(), &pages{pods: many}, driver)
	var inUse *InUseError
	if !errors.As(err, &inUse) || len(inUse.Pods) != 25 {
		t.Fatalf("Check: %v, want an *InUseError of 25 pods", err)
	}
	msg := err.Error()
	for _, want := range []string{"25 pods use the CSI driver " + driver, "shop/needs-running on node node-1", "and 5 more", ListCommand(driver)} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message does not say %q:\n%s", want, msg)
		}
	}
	if n := strings.Count(msg, "shop/needs-running"); n != named {
		t.Errorf("the message names %d pods, want %d", n, named)
	}
}

func TestAListFailureIsReturned(t *testing.T) {
	err := Check(context.Background(), failing{}, driver)
	if !errors.Is(err, errDown) {
		t.Errorf("Check: %v, want the list's error", err)
	}
}

var errDown = errors.New("apiserver down")

type failing struct{}

func (failing) List(context.Context, metav1.ListOptions) (*corev1.PodList, error) {
	return nil, errDown
}

// TestListCommandAgrees runs the kubectl command's jq program on the same
// pods: it lists what Using finds.
func TestListCommandAgrees(t *testing.T) {
	if _, err := exec.LookPath("jq"); err != nil {
		t.Skip("no jq on PATH")
	}
	command := ListCommand(driver)
	_, program, ok := strings.Cut(command, "jq -r ")
	if !ok {
		t.Fatalf("no jq program in %q", command)
	}
	program = strings.Trim(program, "'")
	input, err := json.Marshal(corev1.PodList{Items: cluster()})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("jq", "-r", program)
	cmd.Stdin = strings.NewReader(string(input))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("jq: %v\n%s", err, out)
	}
	want := "shop/needs-running\nshop/needs-pending\nshop/needs-failed-and-deleting\nshop/needs-terminating\n"
	if string(out) != want {
		t.Errorf("the command lists:\n%swant:\n%s", out, want)
	}
}

// TestDeployDocQuotesTheCommand: docs/deploy.md's uninstall steps give the
// same command the refusal prints.
func TestDeployDocQuotesTheCommand(t *testing.T) {
	doc, err := os.ReadFile("../../docs/deploy.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), ListCommand(driver)) {
		t.Errorf("docs/deploy.md does not quote the command:\n%s", ListCommand(driver))
	}
}
