package csidriver

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	kuberecord "k8s.io/client-go/tools/record"

	"github.com/nodeagent-io/nodeagent/pkg/configmapcache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/reconciler"
)

const testNamespace = "shop"

// harness runs a Driver on a socket in a temporary directory, against a
// fake clientset, and talks to it as the kubelet does.
type harness struct {
	t      *testing.T
	client *fake.Clientset
	wrap   func(configmapcache.ConfigMapClient) configmapcache.ConfigMapClient
	// access, if set before start, is the driver's access check.
	access accessChecker
	// clientAs, if set before start, makes the driver read as the pods.
	clientAs ClientAs
	// secrets, if set before start, is the Secrets mode, on the node's
	// own mounts.
	secrets bool
	// tokenDir, if set before start, keeps the pods' tokens there, taken
	// to be a tmpfs unless tokenDirOnDisk.
	tokenDir       string
	tokenDirOnDisk bool
	// recorder, if set before start, is the volume core's.
	recorder reconciler.Recorder
	events   *kuberecord.FakeRecorder
	stateDir string
	podsDir  string
	socket   string
	driver   *Driver
	stop     context.CancelFunc
	done     chan error
	node     csi.NodeClient
	identity csi.IdentityClient
}

func newHarness(t *testing.T, objects ...runtime.Object) *harness {
	t.Helper()
	return newHarnessWith(t, nil, objects...)
}

// newHarnessWith is newHarness with the driver's client of a namespace
// wrapped by wrap (nil: as it is).
func newHarnessWith(t *testing.T, wrap func(configmapcache.ConfigMapClient) configmapcache.ConfigMapClient, objects ...runtime.Object) *harness {
	t.Helper()
	return newHarnessFor(t, wrap, nil, objects...)
}

// newHarnessAs is newHarness with a driver that reads as the pods, each
// token allowed what authorize says.
func newHarnessAs(t *testing.T, authorize *authorizer, objects ...runtime.Object) *harness {
	t.Helper()
	return newHarnessFor(t, nil, authorize, objects...)
}

func newHarnessFor(t *testing.T, wrap func(configmapcache.ConfigMapClient) configmapcache.ConfigMapClient, authorize *authorizer, objects ...runtime.Object) *harness {
	t.Helper()
	return newHarnessMode(t, wrap, authorize, false, objects...)
}

// newHarnessMode is newHarnessFor, in the Secrets mode where secrets.
func newHarnessMode(t *testing.T, wrap func(configmapcache.ConfigMapClient) configmapcache.ConfigMapClient, authorize *authorizer, secrets bool, objects ...runtime.Object) *harness {
	t.Helper()
	// A short root: a unix socket's path has at most 107 bytes.
	root, err := os.MkdirTemp("", "csi")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	h := &harness{t: t, client: fake.NewClientset(objects...), wrap: wrap, stateDir: filepath.Join(root, "state"),
		podsDir: filepath.Join(root, "pods"), socket: filepath.Join(root, "csi.sock"), secrets: secrets}
	if authorize != nil {
		h.clientAs = authorize.clientAs(h)
	}
	h.start()
	t.Cleanup(h.halt)
	return h
}

// start runs a new Driver on the harness's state directory and socket.
func (h *harness) start() {
	h.t.Helper()
	h.events = kuberecord.NewFakeRecorder(100)
	opts := Options{
		NodeName: "node-1", Endpoint: h.socket, StateDir: h.stateDir, ReadAs: ReadAsDriver,
		ConfigMaps: func(ns string) configmapcache.ConfigMapClient {
			var c configmapcache.ConfigMapClient = listThenWatch{h.client.CoreV1().ConfigMaps(ns)}
			if h.wrap != nil {
				c = h.wrap(c)
			}
			return c
		},
		Events: h.events, Access: h.access, Secrets: h.secrets, Recorder: h.recorder,
	}
	if h.clientAs != nil {
		opts.ReadAs, opts.ClientAs = ReadAsPod, h.clientAs
		opts.TokenDir, opts.onMemory = h.tokenDir, func(dir string) error {
			if h.tokenDirOnDisk {
				return &notInMemoryError{dir: dir, fsType: 0xef53}
			}
			return nil
		}
	}
	d, err := New(opts)
	if err != nil {
		h.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h.driver, h.stop, h.done = d, cancel, make(chan error, 1)
	go func() { h.done <- d.Run(ctx) }()
	conn, err := grpc.NewClient("unix://"+h.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(func() { conn.Close() })
	h.node, h.identity = csi.NewNodeClient(conn), csi.NewIdentityClient(conn)
	h.eventually("the driver is ready", func() bool {
		rsp, err := h.identity.Probe(context.Background(), &csi.ProbeRequest{})
		return err == nil && rsp.GetReady().GetValue()
	})
}

// halt stops the driver, as a SIGTERM does.
func (h *harness) halt() {
	if h.stop == nil {
		return
	}
	h.stop()
	if err := <-h.done; err != nil {
		h.t.Errorf("Run: %v", err)
	}
	h.stop = nil
}

// eventually polls cond for up to ten seconds.
func (h *harness) eventually(what string, cond func() bool) {
	h.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		h.t.Fatalf("waiting until %s: %v", what, err)
	}
}

// volume is one pod volume as the kubelet would publish it.
type volume struct {
	id, target string
	attrs      map[string]string
	fsGroup    string
	// secrets are the call's: the pod's token, where the CSIDriver asks
	// for it in secrets.
	secrets map[string]string
}

// newVolume lays out the kubelet's directories for volume name of pod uid
// (the kubelet makes the target's parent; the driver makes the target).
func (h *harness) newVolume(uid, name string, attrs map[string]string) volume {
	h.t.Helper()
	parent := filepath.Join(h.podsDir, uid, "volumes", string(PluginCSI), name)
	if err := os.MkdirAll(parent, 0o750); err != nil {
		h.t.Fatal(err)
	}
	all := podAttrs(attrs)
	all[attrPodUID] = uid
	return volume{id: "csi-" + uid + "-" + name, target: filepath.Join(parent, "mount"), attrs: all}
}

func (h *harness) publish(v volume) error {
	_, err := h.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: v.id, TargetPath: v.target, VolumeContext: v.attrs, Readonly: true, Secrets: v.secrets,
		VolumeCapability: &csi.VolumeCapability{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{VolumeMountGroup: v.fsGroup}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY},
		},
	})
	return err
}

func (h *harness) mustPublish(v volume) {
	h.t.Helper()
	if err := h.publish(v); err != nil {
		h.t.Fatalf("publishing %s: %v", v.id, err)
	}
}

func (h *harness) unpublish(v volume) error {
	_, err := h.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: v.id, TargetPath: v.target})
	return err
}

// read returns a file of the volume as a container reads it, or "" if
// it does not exist.
func (h *harness) read(v volume, path string) string {
	data, err := os.ReadFile(filepath.Join(v.target, path))
	if err != nil {
		return ""
	}
	return string(data)
}

func (h *harness) setConfigMap(name string, data map[string]string) {
	h.t.Helper()
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}, Data: data}
	if _, err := h.client.CoreV1().ConfigMaps(testNamespace).Update(ctx, cm, metav1.UpdateOptions{}); err == nil {
		return
	}
	if _, err := h.client.CoreV1().ConfigMaps(testNamespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		h.t.Fatal(err)
	}
}

// listThenWatch tells the reflectors that the fake clientset cannot stream
// a watch-list, which it cannot.
type listThenWatch struct {
	typedcorev1.ConfigMapInterface
}

func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

func configMap(name string, data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNamespace, Name: name}, Data: data}
}
