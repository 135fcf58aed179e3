package csidriver

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/core"
)

// PluginCSI is the kubelet's directory of CSI volumes, in which a target
// path lies: <root>/pods/<uid>/volumes/kubernetes.io~csi/<volume>/mount.
const PluginCSI podrefs.Plugin = "kubernetes.io~csi"

// volumes is what the node service asks of the volume core
// (core.Core).
type volumes interface {
	AddVolume(v cache.DesiredVolume)
	RestoreVolume(v cache.DesiredVolume)
	RemoveVolume(key cache.VolumeKey)
	WaitForVolume(ctx context.Context, key cache.VolumeKey) error
	WaitForVolumeGone(ctx context.Context, key cache.VolumeKey) error
}

// configMaps is what it asks of the ConfigMap watches
// (configmapcache.Watches).
type configMaps interface {
	Add(namespace, name string)
	Remove(namespace, name string)
	GetConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// accessChecker says whether a pod's service account may read a ConfigMap
// (access.go); nil checks nothing beyond the namespace.
type accessChecker interface {
	MayGet(ctx context.Context, pod podInfo, configMap string) error
}

// nodeServer is the CSI Node service.
type nodeServer struct {
	csi.UnimplementedNodeServer
	nodeName   string
	volumes    volumes
	configMaps configMaps
	access     accessChecker
	state      stateDir
	// reads, where set (ReadAsPod), read each volume's ConfigMap as its
	// pod, with the token of its publish call; revoked are the volumes
	// whose pod's read was refused at a republish, which get no update
	// (followed), and remount makes volumes read their ConfigMap again.
	reads   *podReads
	revoked map[cache.VolumeKey]bool
	remount func(keys []cache.VolumeKey)

	// mu guards published and locks; locks serializes the calls of one
	// volume (the CSI spec lets a CO send them concurrently).
	mu        sync.Mutex
	published map[string]record
	locks     map[string]*volumeLock
}

// volumeLock is one volume's lock, kept while some call holds or awaits it.
type volumeLock struct {
	sync.Mutex
	users int
}

func newNodeServer(nodeName string, v volumes, cms configMaps, access accessChecker, state stateDir) *nodeServer {
	return &nodeServer{nodeName: nodeName, volumes: v, configMaps: cms, access: access, state: state,
		published: map[string]record{}, locks: map[string]*volumeLock{}, revoked: map[cache.VolumeKey]bool{}}
}

// lock takes volumeID's lock and returns its release, which forgets the
// lock when no other call holds or awaits it.
func (s *nodeServer) lock(volumeID string) func() {
	s.mu.Lock()
	l, ok := s.locks[volumeID]
	if !ok {
		l = &volumeLock{}
		s.locks[volumeID] = l
	}
	l.users++
	s.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		s.mu.Lock()
		if l.users--; l.users == 0 {
			delete(s.locks, volumeID)
		}
		s.mu.Unlock()
	}
}

func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	return &csi.NodeGetInfoResponse{NodeId: s.nodeName}, nil
}

// NodeGetCapabilities claims VOLUME_MOUNT_GROUP: the kubelet passes the
// pod's fsGroup in the publish call and changes no file itself, so files
// written after the first publish (every update) get the group too.
func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	return &csi.NodeGetCapabilitiesResponse{Capabilities: []*csi.NodeServiceCapability{{
		Type: &csi.NodeServiceCapability_Rpc{Rpc: &csi.NodeServiceCapability_RPC{Type: csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP}},
	}}}, nil
}

// NodePublishVolume writes the volume's files at the target path and keeps
// them up to date until NodeUnpublishVolume. It returns once the files
// are on disk, or with the reason they cannot be: the kubelet shows it in
// the pod's events and calls again.
func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	rec, err := recordOf(req)
	if err != nil {
		return nil, err
	}
	defer s.lock(rec.VolumeID)()

	s.mu.Lock()
	old, known := s.published[rec.VolumeID]
	s.mu.Unlock()
	if known && !old.same(rec) {
		return nil, status.Errorf(codes.AlreadyExists, "volume %s is already published at %s with other attributes", rec.VolumeID, old.TargetPath)
	}
	spec, desired, err := desiredVolume(rec)
	if err != nil {
		return nil, status.Error(codes.InvalidArgument, err.Error())
	}
	if err := s.readAsPod(ctx, req, rec, spec, desired.Key, known); err != nil {
		return nil, err
	}
	if !known && s.access != nil {
		if err := s.access.MayGet(ctx, spec.Pod, spec.Source.Name); err != nil {
			s.releaseToken(spec, rec.VolumeID)
			return nil, status.Error(codes.PermissionDenied, err.Error())
		}
	}
	if !known {
		s.serve(spec, desired, false)
	}
	if err := s.volumes.WaitForVolume(ctx, desired.Key); err != nil {
		if known {
			// Published and served: the files stay, and so does the volume.
			return nil, status.Errorf(codes.Unavailable, "volume %s is published but not on disk: %v", rec.VolumeID, err)
		}
		s.withdraw(spec, desired.Key, rec.VolumeID)
		return nil, publishError(ctx, err)
	}
	if !known {
		if err := s.state.save(rec); err != nil {
			s.withdraw(spec, desired.Key, rec.VolumeID)
			return nil, status.Errorf(codes.Internal, "recording volume %s: %v", rec.VolumeID, err)
		}
		s.mu.Lock()
		s.published[rec.VolumeID] = rec
		s.mu.Unlock()
		klog.FromContext(ctx).V(2).Info("Published volume", "volumeID", rec.VolumeID, "pod", klog.KRef(spec.Pod.Namespace, spec.Pod.Name),
			"configMap", spec.Source.Name, "updates", desired.Layout, "targetPath", rec.TargetPath)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// readAsPod, where the driver reads as the pods, checks that the call
// carries the pod's token and, for a new volume, that the pod may read
// its ConfigMap, and holds the token for the ConfigMap's watch: before the
// volume is served, so that the watch opens with it.
func (s *nodeServer) readAsPod(ctx context.Context, req *csi.NodePublishVolumeRequest, rec record, spec volumeSpec, key cache.VolumeKey, known bool) error {
	if s.reads == nil {
		return nil
	}
	token, ok, err := tokenOf(req.GetSecrets(), req.GetVolumeContext())
	if err != nil {
		return status.Error(codes.InvalidArgument, err.Error())
	}
	if !ok {
		if known {
			return nil // published before its CSIDriver asked for tokens: served as it is
		}
		return status.Errorf(codes.FailedPrecondition, "the call carries no service account token of pod %s/%s: the CSIDriver object must ask for one "+
			"(spec.tokenRequests with no audience, as this release's chart and manifests install it), or the driver must run with --read-as=driver",
			spec.Pod.Namespace, spec.Pod.Name)
	}
	if known {
		return s.recheck(ctx, rec, spec, key, token)
	}
	if err := s.reads.check(ctx, spec.Pod, spec.Source.Name, token); err != nil {
		return readError(err)
	}
	s.reads.hold(objectKey{spec.Pod.Namespace, spec.Source.Name}, rec.VolumeID, token)
	return nil
}

// recheck, at a republish, reads the ConfigMap again as the pod where its
// token changed (the kubelet renews it well before it expires) or where
// its read was refused before. A pod whose access was revoked gets no
// further update: its volume keeps its last content, as the kubelet keeps
// a volume it cannot refresh, and each republish fails with
// PermissionDenied (the pod's FailedMount events) until its access
// returns, when the volume reads the ConfigMap again at once.
func (s *nodeServer) recheck(ctx context.Context, rec record, spec volumeSpec, key cache.VolumeKey, token podToken) error {
	object := objectKey{spec.Pod.Namespace, spec.Source.Name}
	held, holds := s.reads.creds.tokenOf(object, rec.VolumeID)
	s.mu.Lock()
	revoked := s.revoked[key]
	s.mu.Unlock()
	if holds && held.value == token.value && !revoked {
		return nil
	}
	if err := s.reads.check(ctx, spec.Pod, spec.Source.Name, token); err != nil {
		if denied := (*accessDenied)(nil); errors.As(err, &denied) {
			s.setRevoked(key, true)
			s.reads.release(object, rec.VolumeID)
			return status.Errorf(codes.PermissionDenied, "%v; the volume keeps its last content and gets no update until the account may read it again", err)
		}
		return readError(err)
	}
	s.reads.hold(object, rec.VolumeID, token)
	if revoked {
		s.setRevoked(key, false)
		s.remount([]cache.VolumeKey{key})
	}
	return nil
}

func (s *nodeServer) setRevoked(key cache.VolumeKey, revoked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if revoked {
		s.revoked[key] = true
	} else {
		delete(s.revoked, key)
	}
}

// followed are those of keys whose volumes get their ConfigMap's updates:
// all but the revoked.
func (s *nodeServer) followed(keys []cache.VolumeKey) []cache.VolumeKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.revoked) == 0 {
		return keys
	}
	out := keys[:0:0]
	for _, k := range keys {
		if !s.revoked[k] {
			out = append(out, k)
		}
	}
	return out
}

// readError is the code of a pod's own read's failure: PermissionDenied
// where its account may not, Unavailable where the apiserver cannot say.
func readError(err error) error {
	if denied := (*accessDenied)(nil); errors.As(err, &denied) {
		return status.Error(codes.PermissionDenied, err.Error())
	}
	return status.Error(codes.Unavailable, err.Error())
}

// releaseToken forgets a volume's token, where the driver reads as the
// pods.
func (s *nodeServer) releaseToken(spec volumeSpec, volumeID string) {
	if s.reads != nil {
		s.reads.release(objectKey{spec.Pod.Namespace, spec.Source.Name}, volumeID)
	}
}

// serve makes desired the volume core's, and its ConfigMap watched. A
// volume restored after a restart (restored) has its files on disk made
// the core's at once, so that an unpublish before its first
// remount removes them.
func (s *nodeServer) serve(spec volumeSpec, desired cache.DesiredVolume, restored bool) {
	// The watch first: the reconciler may mount the volume as soon as it
	// is added, and reads it from the watch.
	s.configMaps.Add(spec.Pod.Namespace, spec.Source.Name)
	if restored {
		s.volumes.RestoreVolume(desired)
	} else {
		s.volumes.AddVolume(desired)
	}
}

// withdraw undoes serve at once, for a volume that never made it to disk,
// and forgets its pod's token. Unpublish instead waits for the files to go
// before it drops the watch.
func (s *nodeServer) withdraw(spec volumeSpec, key cache.VolumeKey, volumeID string) {
	s.volumes.RemoveVolume(key)
	s.configMaps.Remove(spec.Pod.Namespace, spec.Source.Name)
	s.releaseToken(spec, volumeID)
}

// recordOf checks a publish call's fields, as the CSI spec requires them.
func recordOf(req *csi.NodePublishVolumeRequest) (record, error) {
	switch {
	case req.GetVolumeId() == "":
		return record{}, status.Error(codes.InvalidArgument, "volume_id is required")
	case req.GetTargetPath() == "":
		return record{}, status.Error(codes.InvalidArgument, "target_path is required")
	case req.GetVolumeCapability() == nil:
		return record{}, status.Error(codes.InvalidArgument, "volume_capability is required")
	case req.GetVolumeCapability().GetBlock() != nil:
		return record{}, status.Error(codes.InvalidArgument, "block access is not supported: the volume is a directory of files")
	}
	if err := validVolumeID(req.GetVolumeId()); err != nil {
		return record{}, status.Error(codes.InvalidArgument, err.Error())
	}
	if !filepath.IsAbs(req.GetTargetPath()) {
		return record{}, status.Errorf(codes.InvalidArgument, "target_path %q is not absolute", req.GetTargetPath())
	}
	// The pod's token is never recorded, nor compared: each republish
	// brings a newer one.
	return record{
		VolumeID: req.GetVolumeId(), TargetPath: filepath.Clean(req.GetTargetPath()), VolumeContext: withoutTokens(req.GetVolumeContext()),
		MountGroup: req.GetVolumeCapability().GetMount().GetVolumeMountGroup(), ReadOnly: req.GetReadonly(),
	}, nil
}

// desiredVolume turns a record into the volume core's volume, from what
// the kubelet told (the pod's namespace, name and uid, its fsGroup): the
// pod is the subject of the volume's events, and the group its files get.
func desiredVolume(rec record) (volumeSpec, cache.DesiredVolume, error) {
	spec, err := parseAttributes(rec.VolumeContext)
	if err != nil {
		return spec, cache.DesiredVolume{}, err
	}
	req := &cache.Request{
		Namespace: spec.Pod.Namespace,
		Subject: &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Namespace: spec.Pod.Namespace, Name: spec.Pod.Name, UID: spec.Pod.UID},
		},
	}
	if rec.MountGroup != "" {
		gid, err := strconv.ParseInt(rec.MountGroup, 10, 64)
		if err != nil || gid < 0 {
			return spec, cache.DesiredVolume{}, fmt.Errorf("volume_mount_group %q is not a group id", rec.MountGroup)
		}
		req.FSGroup = &gid
	}
	name := volumeName(rec)
	source := spec.Source
	return spec, cache.DesiredVolume{
		Key:     cache.VolumeKey{PodUID: spec.Pod.UID, Volume: name},
		Request: req,
		Spec:    podrefs.KeptVolume{Name: name, Plugin: PluginCSI, ConfigMap: &source},
		Dir:     rec.TargetPath,
		Layout:  spec.Layout,
	}, nil
}

// volumeName is the pod's name for the volume, read from the target path
// the kubelet chose (.../kubernetes.io~csi/<volume>/mount), or the volume
// id when the path has another shape.
func volumeName(rec record) string {
	parent := filepath.Dir(rec.TargetPath)
	if filepath.Base(rec.TargetPath) == "mount" && filepath.Base(filepath.Dir(parent)) == string(PluginCSI) {
		return filepath.Base(parent)
	}
	return rec.VolumeID
}

// publishError says why a volume could not be set up, with the code that
// fits its cause as the volume manager classified it: NotFound for a
// missing ConfigMap, Unavailable when the ConfigMap cannot be read yet (the
// apiserver is down: the kubelet keeps the target directory and retries),
// FailedPrecondition when the ConfigMap lacks what the volume asks for or
// its files cannot be written as asked, Internal for the disk.
func publishError(ctx context.Context, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	switch core.CauseOf(err) {
	case core.CauseObjectNotFound:
		return status.Error(codes.NotFound, err.Error())
	case core.CauseNotReadable:
		return status.Error(codes.Unavailable, err.Error())
	case core.CauseKeyMissing, core.CauseInvalidPayload:
		return status.Error(codes.FailedPrecondition, err.Error())
	}
	return status.Errorf(codes.Internal, "writing the volume: %v", err)
}

// NodeUnpublishVolume removes the volume's files and its target path, and
// stops keeping it up to date. A volume the driver does not know (never
// published, or already unpublished) succeeds, its empty target directory
// removed if there is one.
func (s *nodeServer) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	switch {
	case req.GetVolumeId() == "":
		return nil, status.Error(codes.InvalidArgument, "volume_id is required")
	case req.GetTargetPath() == "":
		return nil, status.Error(codes.InvalidArgument, "target_path is required")
	}
	defer s.lock(req.GetVolumeId())()
	s.mu.Lock()
	rec, known := s.published[req.GetVolumeId()]
	s.mu.Unlock()
	if !known {
		if err := removeUnknownTarget(req.GetTargetPath()); err != nil {
			return nil, status.Error(codes.Internal, err.Error())
		}
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	spec, desired, err := desiredVolume(rec)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "the record of volume %s no longer parses: %v", rec.VolumeID, err)
	}
	s.volumes.RemoveVolume(desired.Key)
	if err := s.volumes.WaitForVolumeGone(ctx, desired.Key); err != nil {
		return nil, status.Errorf(codes.Internal, "removing volume %s: %v", rec.VolumeID, err)
	}
	s.configMaps.Remove(spec.Pod.Namespace, spec.Source.Name)
	s.releaseToken(spec, rec.VolumeID)
	s.setRevoked(desired.Key, false)
	if err := s.state.remove(rec.VolumeID); err != nil {
		return nil, status.Errorf(codes.Internal, "removing the record of volume %s: %v", rec.VolumeID, err)
	}
	s.mu.Lock()
	delete(s.published, rec.VolumeID)
	s.mu.Unlock()
	klog.FromContext(ctx).V(2).Info("Unpublished volume", "volumeID", rec.VolumeID, "pod", klog.KRef(spec.Pod.Namespace, spec.Pod.Name))
	return &csi.NodeUnpublishVolumeResponse{}, nil
}

// removeUnknownTarget removes the target path of a volume the driver has
// no record of (its record was lost or could not be read): the atomic
// writer's files, told by their layout, and then the directory. Anything
// else in it is left, with an error: without a record the driver cannot
// tell the in-place layout's files from somebody else's.
func removeUnknownTarget(path string) error {
	if err := atomicwriter.RemoveOwn(path); err != nil {
		return fmt.Errorf("target path of a volume this driver has no record of: %w", err)
	}
	return nil
}
