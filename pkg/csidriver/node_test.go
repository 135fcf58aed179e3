package csidriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/internal/volumetree"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

func wantCode(t *testing.T, err error, code codes.Code, says string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), says) {
		t.Errorf("error %v, want code %s saying %q", err, code, says)
	}
}

// The kubelet's layout, updated on a change, gone at unpublish; the same
// call twice succeeds, and the same volume with other attributes does not.
func TestPublishUpdateUnpublish(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("app", map[string]string{"a.conf": "one", "b": "bee"}))
	v := h.newVolume("uid-1", "config", map[string]string{podrefs.AttrConfigMap: "app"})
	h.mustPublish(v)
	got, err := atomicwriter.ReadCurrent(v.target)
	if err != nil {
		t.Fatalf("the volume has no ..data generation: %v", err)
	}
	if diff := cmp.Diff(map[string][]byte{"a.conf": []byte("one"), "b": []byte("bee")}, got); diff != "" {
		t.Errorf("files (-want +got):\n%s", diff)
	}
	h.mustPublish(v) // idempotent
	other := v
	other.attrs = podAttrs(map[string]string{podrefs.AttrConfigMap: "app", podrefs.AttrUpdates: podrefs.UpdatesInPlace, attrPodUID: "uid-1"})
	wantCode(t, h.publish(other), codes.AlreadyExists, "other attributes")

	h.setConfigMap("app", map[string]string{"a.conf": "two"})
	h.eventually("the update is in the volume", func() bool { return h.read(v, "a.conf") == "two" && h.read(v, "b") == "" })

	if err := h.unpublish(v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v.target); !os.IsNotExist(err) {
		t.Errorf("the target path is still there: %v", err)
	}
	if err := h.unpublish(v); err != nil {
		t.Errorf("a second unpublish: %v", err)
	}
	h.eventually("the watch is closed", func() bool { return h.driver.Watching() == 0 })
}

// One watch per ConfigMap, whatever the number of volumes that read it.
func TestOneWatchPerConfigMap(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("shared", map[string]string{"k": "v"}), configMap("own", map[string]string{"k": "w"}))
	var vols []volume
	for i, name := range []string{"shared", "shared", "shared", "own"} {
		v := h.newVolume("uid-"+string(rune('a'+i)), "config", map[string]string{podrefs.AttrConfigMap: name})
		h.mustPublish(v)
		vols = append(vols, v)
	}
	if n := h.driver.Watching(); n != 2 {
		t.Errorf("%d watches for 2 ConfigMaps", n)
	}
	for _, v := range vols[:3] {
		if err := h.unpublish(v); err != nil {
			t.Fatal(err)
		}
	}
	h.eventually("one watch is left", func() bool { return h.driver.Watching() == 1 })
	gets := 0
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "get" {
			gets++
		}
	}
	if gets != 0 {
		t.Errorf("%d GETs; the driver reads through watches only", gets)
	}
}

// An in-place volume keeps each file's inode, so a subPath mount of it
// sees updates; fsGroup and modes end as the kubelet's do.
func TestInPlaceUpdatesKeepTheInode(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("app", map[string]string{"a": "1", "b": "2"}))
	v := h.newVolume("uid-1", "config", map[string]string{podrefs.AttrConfigMap: "app", podrefs.AttrUpdates: podrefs.UpdatesInPlace,
		podrefs.AttrItems: `[{"key":"a","path":"etc/a.conf","mode":384}]`})
	v.fsGroup = "2000"
	h.mustPublish(v)
	path := filepath.Join(v.target, "etc/a.conf")
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	if info.Mode().Perm() != 0o640 || st.Gid != 2000 {
		t.Errorf("mode %v group %d, want 0640 and 2000 (mode 0600 with fsGroup, as the kubelet ends it)", info.Mode().Perm(), st.Gid)
	}
	if _, err := os.Lstat(filepath.Join(v.target, "..data")); !os.IsNotExist(err) {
		t.Errorf("an in-place volume has a ..data entry: %v", err)
	}
	held, err := os.Open(path) // as a subPath bind mount holds the inode
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	h.setConfigMap("app", map[string]string{"a": "one more"})
	h.eventually("the held file reads the update", func() bool {
		buf := make([]byte, 64)
		n, _ := held.ReadAt(buf, 0)
		return string(buf[:n]) == "one more"
	})
	tree, err := volumetree.Read(v.target)
	if err != nil || len(tree) != 2 || tree["etc/a.conf"].Kind != volumetree.File {
		t.Errorf("entries %v (%v), want etc and etc/a.conf alone", tree, err)
	}
}

func TestPublishRefusals(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("app", map[string]string{"a": "1"}))
	wantCode(t, h.publish(h.newVolume("uid-1", "missing", map[string]string{podrefs.AttrConfigMap: "nope"})),
		codes.NotFound, `couldn't get configMap shop/nope: configmaps "nope" not found`)
	wantCode(t, h.publish(h.newVolume("uid-1", "key", map[string]string{podrefs.AttrConfigMap: "app", podrefs.AttrItems: `[{"key":"x","path":"x"}]`})),
		codes.FailedPrecondition, `has no key "x"`)
	wantCode(t, h.publish(h.newVolume("uid-1", "ns", map[string]string{podrefs.AttrConfigMap: "app", "namespace": "kube-system"})),
		codes.InvalidArgument, "own pod's namespace")
	bad := h.newVolume("uid-1", "group", map[string]string{podrefs.AttrConfigMap: "app"})
	bad.fsGroup = "wheel"
	wantCode(t, h.publish(bad), codes.InvalidArgument, "not a group id")
	for _, name := range []string{"missing", "key", "ns", "group"} {
		target := filepath.Join(h.podsDir, "uid-1/volumes", string(PluginCSI), name, "mount")
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Errorf("a refused volume left its target path %s: %v", target, err)
		}
	}
	h.eventually("the refused volumes' watches are closed", func() bool { return h.driver.Watching() == 0 })
}

// An optional volume of a missing ConfigMap is empty, and filled when the
// ConfigMap appears; a deleted ConfigMap leaves the last content and says
// so in an event; a recreated immutable one reaches the volume.
func TestMissingDeletedAndRecreated(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	opt := h.newVolume("uid-1", "opt", map[string]string{podrefs.AttrConfigMap: "later", podrefs.AttrOptional: "true"})
	h.mustPublish(opt)
	if files, _ := atomicwriter.ReadCurrent(opt.target); len(files) != 0 {
		t.Errorf("an optional volume of a missing ConfigMap holds %v", files)
	}
	h.setConfigMap("later", map[string]string{"k": "here"})
	h.eventually("the optional volume is filled", func() bool { return h.read(opt, "k") == "here" })

	immutable := configMap("frozen", map[string]string{"k": "v1"})
	immutable.Immutable = new(true)
	if _, err := h.client.CoreV1().ConfigMaps(testNamespace).Create(context.Background(), immutable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	v := h.newVolume("uid-2", "frozen", map[string]string{podrefs.AttrConfigMap: "frozen"})
	h.mustPublish(v)
	if err := h.client.CoreV1().ConfigMaps(testNamespace).Delete(context.Background(), "frozen", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("a FailedMount event names the deleted ConfigMap", func() bool {
		select {
		case e := <-h.events.Events:
			return strings.Contains(e, "FailedMount") && strings.Contains(e, "frozen")
		default:
			return false
		}
	})
	if got := h.read(v, "k"); got != "v1" {
		t.Errorf("after the delete the volume holds %q, want the last content v1", got)
	}
	immutable.Data = map[string]string{"k": "v2"}
	if _, err := h.client.CoreV1().ConfigMaps(testNamespace).Create(context.Background(), immutable, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.eventually("the recreated immutable ConfigMap is in the volume", func() bool { return h.read(v, "k") == "v2" })
}

// A restarted driver serves every volume it published: updates made while
// it was down arrive, and unpublish works.
func TestRestartKeepsServing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("app", map[string]string{"k": "1"}))
	v := h.newVolume("uid-1", "config", map[string]string{podrefs.AttrConfigMap: "app"})
	h.mustPublish(v)
	gone := h.newVolume("uid-2", "config", map[string]string{podrefs.AttrConfigMap: "app"})
	h.mustPublish(gone)
	h.halt()
	h.setConfigMap("app", map[string]string{"k": "2"})
	// The second pod left while the driver was down.
	if err := os.RemoveAll(filepath.Join(h.podsDir, "uid-2")); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.eventually("the update made while down is in the volume", func() bool { return h.read(v, "k") == "2" })
	h.driver.node.mu.Lock()
	restored := len(h.driver.node.published)
	h.driver.node.mu.Unlock()
	if restored != 1 {
		t.Errorf("%d volumes restored, want 1 (the other's pod is gone)", restored)
	}
	h.setConfigMap("app", map[string]string{"k": "3"})
	h.eventually("a later update is in the volume", func() bool { return h.read(v, "k") == "3" })
	if err := h.unpublish(v); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(h.stateDir, "volumes")); len(entries) != 0 {
		t.Errorf("records left after every volume went: %v", entries)
	}
}

func TestUnpublishOfAnUnknownVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	v := h.newVolume("uid-1", "config", nil)
	if err := os.Mkdir(v.target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := h.unpublish(v); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(v.target); !os.IsNotExist(err) {
		t.Errorf("the empty target path is still there: %v", err)
	}
	if err := os.MkdirAll(v.target, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v.target, "not-ours"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	wantCode(t, h.unpublish(v), codes.Internal, "which the writer did not write; left as it is")
}

// A record that cannot be read at start is moved aside, with a log line
// and an event on the node that say where; the unpublish of its volume
// then removes the files the atomic writer's layout shows to be the
// driver's, so the pod terminates.
func TestUnreadableRecordIsMovedAsideAndItsVolumeRemoved(t *testing.T) {
	h := newHarness(t)
	h.setConfigMap("app", map[string]string{"k": "1"})
	v := h.newVolume("uid-1", "config", map[string]string{podrefs.AttrConfigMap: "app"})
	h.mustPublish(v)
	h.halt()
	record := filepath.Join(h.stateDir, "volumes", v.id+recordSuffix)
	if err := os.WriteFile(record, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.start()
	if _, err := os.Stat(filepath.Join(h.stateDir, "volumes", unreadableDir, v.id+recordSuffix)); err != nil {
		t.Errorf("the unreadable record was not moved aside: %v", err)
	}
	select {
	case e := <-h.events.Events:
		if !strings.Contains(e, "VolumeRecordUnreadable") || !strings.Contains(e, unreadableDir) {
			t.Errorf("event %q, want VolumeRecordUnreadable saying where the record went", e)
		}
	default:
		t.Error("no event for the unreadable record")
	}
	if err := h.unpublish(v); err != nil {
		t.Fatalf("unpublish of the volume whose record was unreadable: %v", err)
	}
	if _, err := os.Stat(v.target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("its target path is still there (%v): the pod would never terminate", err)
	}
}

// Calls of one volume run one at a time, and the driver keeps no lock of a
// volume once its calls are done.
func TestConcurrentCallsOfOneVolume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, configMap("app", map[string]string{"k": "1"}))
	v := h.newVolume("uid-1", "config", map[string]string{podrefs.AttrConfigMap: "app"})
	errs := make(chan error, 8)
	for range 8 {
		go func() { errs <- h.publish(v) }()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Errorf("a concurrent publish of the same volume: %v", err)
		}
	}
	if err := h.unpublish(v); err != nil {
		t.Fatal(err)
	}
	// One publish took the ConfigMap's reference, so one unpublish drops it.
	h.eventually("the watch closed", func() bool { return h.driver.Watching() == 0 })
	h.driver.node.mu.Lock()
	defer h.driver.node.mu.Unlock()
	if n := len(h.driver.node.locks); n != 0 || len(h.driver.node.published) != 0 {
		t.Errorf("%d locks and %d volumes kept after the last call", n, len(h.driver.node.published))
	}
}

// A volume restored after a restart whose ConfigMap is gone cannot be
// remounted; an unpublish before it ever is removes its files and target
// path all the same, so the pod can terminate (seen on kind: the kubelet
// retried the unpublish for ever against a non-empty directory).
func TestUnpublishOfARestoredVolumeThatNeverRemounted(t *testing.T) {
	h := newHarness(t)
	h.setConfigMap("app", map[string]string{"k": "1"})
	v := h.newVolume("uid-1", "config", map[string]string{podrefs.AttrConfigMap: "app"})
	h.mustPublish(v)
	h.halt()
	if err := h.client.CoreV1().ConfigMaps(testNamespace).Delete(context.Background(), "app", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	h.start()
	if h.read(v, "k") != "1" {
		t.Fatal("the restored volume lost its last content; the test proves nothing")
	}
	if err := h.unpublish(v); err != nil {
		t.Fatalf("unpublish: %v", err)
	}
	if _, err := os.Stat(v.target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target path is still there after the unpublish (%v): the pod would never terminate", err)
	}
}

// The files' owners are the attributes' (defaultUser, items' user), in
// either layout, and stay theirs through an update; the group is still
// the fsGroup's.
func TestPublishSetsTheFilesOwners(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		t.Skip("setting another user as a file's owner needs root")
	}
	h := newHarness(t, configMap("app", map[string]string{"a": "1", "b": "2"}))
	for _, updates := range []string{podrefs.UpdatesAtomic, podrefs.UpdatesInPlace} {
		v := h.newVolume("uid-"+updates, "config", map[string]string{podrefs.AttrConfigMap: "app", podrefs.AttrUpdates: updates,
			podrefs.AttrDefaultUser: "1000", podrefs.AttrItems: `[{"key":"a","path":"a","user":2000},{"key":"b","path":"b"}]`})
		v.fsGroup = "3000"
		h.mustPublish(v)
		owners := func() string {
			var out []string
			for _, name := range []string{"a", "b"} {
				info, err := os.Stat(filepath.Join(v.target, name))
				if err != nil {
					return err.Error()
				}
				st := info.Sys().(*syscall.Stat_t)
				out = append(out, fmt.Sprintf("%s:%d:%d", name, st.Uid, st.Gid))
			}
			return strings.Join(out, " ")
		}
		if got := owners(); got != "a:2000:3000 b:1000:3000" {
			t.Errorf("%s: owners %s, want a:2000:3000 b:1000:3000", updates, got)
		}
		h.setConfigMap("app", map[string]string{"a": "one", "b": "two"})
		h.eventually(updates+": the update is in the volume", func() bool { return h.read(v, "a") == "one" && h.read(v, "b") == "two" })
		if got := owners(); got != "a:2000:3000 b:1000:3000" {
			t.Errorf("%s, after an update: owners %s", updates, got)
		}
	}
}
