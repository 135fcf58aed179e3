package csidriver

import (
	"context"
	"errors"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// readAsPod, where the driver reads as the pods, checks that the call
// carries the pod's token and, for a new volume, that the pod may read
// each object its volume names, and holds the token for their watches:
// before the volume is served, so that the watches open with it.
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
	for _, ref := range spec.objects() {
		if err := s.reads.check(ctx, spec.Pod, ref, token); err != nil {
			return readError(err)
		}
	}
	s.holdTokens(ctx, spec, rec.VolumeID, token)
	return nil
}

// recheck, at a republish, reads the volume's objects again as the pod
// where its token changed (the kubelet renews it well before it expires)
// or where a read was refused before. A pod whose access was revoked gets
// no further update: its volume keeps its last content, as the kubelet
// keeps a volume it cannot refresh, and each republish fails with
// PermissionDenied (the pod's FailedMount events) until its access
// returns, when the volume reads its objects again at once.
func (s *nodeServer) recheck(ctx context.Context, rec record, spec volumeSpec, key cache.VolumeKey, token podToken) error {
	s.mu.Lock()
	revoked := s.revoked[key]
	s.mu.Unlock()
	if !revoked && s.holdsToken(spec, rec.VolumeID, token) {
		return nil
	}
	for _, ref := range spec.objects() {
		if err := s.reads.check(ctx, spec.Pod, ref, token); err != nil {
			if denied := (*accessDenied)(nil); errors.As(err, &denied) {
				s.setRevoked(key, true)
				s.releaseTokens(ctx, spec, rec.VolumeID)
				return status.Errorf(codes.PermissionDenied, "%v; the volume keeps its last content and gets no update until the account may read it again", err)
			}
			return readError(err)
		}
	}
	s.holdTokens(ctx, spec, rec.VolumeID, token)
	if revoked {
		s.setRevoked(key, false)
		s.remount([]cache.VolumeKey{key})
	}
	return nil
}

// holdsToken says whether the volume holds token for every object it
// reads.
func (s *nodeServer) holdsToken(spec volumeSpec, volumeID string, token podToken) bool {
	for _, ref := range spec.objects() {
		if held, ok := s.reads.creds.tokenOf(ref, volumeID); !ok || held.value != token.value {
			return false
		}
	}
	return true
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

// followed are those of keys whose volumes get their objects' updates: all
// but the revoked.
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

// holdTokens holds a volume's token for the watch of each of its objects,
// once its pod's reads succeeded, and keeps it for the driver's next start
// (tokenKeeper): a volume whose token cannot be kept is served all the
// same, and waits for a republish after a restart.
func (s *nodeServer) holdTokens(ctx context.Context, spec volumeSpec, volumeID string, token podToken) {
	s.reads.holdAll(spec, volumeID, token)
	if err := s.tokens.keep(volumeID, token); err != nil {
		klog.FromContext(ctx).Error(err, "A restarted driver will wait for the kubelet's next publish call of this volume", "volumeID", volumeID)
	}
}

// releaseTokens forgets a volume's token for each of its objects, and the
// one kept for a restart, where the driver reads as the pods.
func (s *nodeServer) releaseTokens(ctx context.Context, spec volumeSpec, volumeID string) {
	if s.reads == nil {
		return
	}
	for _, ref := range spec.objects() {
		s.reads.release(ref, volumeID)
	}
	if err := s.tokens.forget(volumeID); err != nil {
		klog.FromContext(ctx).Error(err, "A token of a volume gone stays in memory until the node restarts", "volumeID", volumeID)
	}
}

// mayGet is the opt-in access check (access.go) of a volume's ConfigMaps,
// where the driver reads as itself.
func (s *nodeServer) mayGet(ctx context.Context, spec volumeSpec) error {
	if s.access == nil {
		return nil
	}
	for _, ref := range spec.objects() {
		if ref.kind != model.ConfigMap {
			continue
		}
		if err := s.access.MayGet(ctx, spec.Pod, ref.name); err != nil {
			return status.Error(codes.PermissionDenied, err.Error())
		}
	}
	return nil
}

// servesSecrets refuses a volume that reads a Secret where the driver
// does not serve Secrets: reading as itself (it may read no Secret), or
// outside the Secrets mode (it cannot keep the bytes off the disk).
func (s *nodeServer) servesSecrets(spec volumeSpec) error {
	switch {
	case !spec.Source.HoldsSecrets():
		return nil
	case s.reads == nil:
		return status.Error(codes.FailedPrecondition, "the volume reads a Secret, which the driver reads only as the pod: run it with --read-as=pod (the chart's csi.readAs=pod)")
	case s.tmpfs == nil:
		return status.Error(codes.FailedPrecondition, "the volume reads a Secret, which the driver serves only in its Secrets mode, on a tmpfs: run it with --secrets (the chart's csi.secrets.enabled=true)")
	}
	return nil
}
