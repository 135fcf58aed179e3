package csidriver

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
)

// A driver's start: the volumes it served before, and what it tells the
// node of what it cannot serve or keep.

// restore serves again the volumes recorded before a restart, and returns
// how many. A record whose target directory is gone (its pod left while
// the driver was down, and the kubelet's unpublish found no one) is
// dropped. It runs before gRPC serves, so nothing else holds the records.
func (d *Driver) restore(ctx context.Context) int {
	logger := klog.FromContext(ctx)
	records, errs := d.node.state.load()
	for _, err := range errs {
		d.unreadableRecord(logger, err)
	}
	tokens := d.keptTokens(logger)
	for _, rec := range records {
		if _, err := os.Stat(filepath.Dir(rec.TargetPath)); errors.Is(err, fs.ErrNotExist) {
			logger.Info("Dropping the record of a volume whose pod is gone", "volumeID", rec.VolumeID, "targetPath", rec.TargetPath)
			_ = d.node.state.remove(rec.VolumeID)
			continue
		}
		spec, desired, err := desiredVolume(rec)
		if err != nil {
			d.unreadableRecord(logger, d.node.state.unreadable(rec.VolumeID+recordSuffix, err))
			continue
		}
		// A volume that holds Secrets is served again on its tmpfs (a new
		// one after a node restart, filled at its next publish), or not
		// at all where this driver serves no Secret.
		if err := d.node.servesSecrets(spec); err != nil {
			logger.Error(err, "Not serving a recorded volume", "volumeID", rec.VolumeID)
			continue
		}
		if err := d.node.mountTmpfs(spec, rec); err != nil {
			logger.Error(err, "Not serving a recorded volume", "volumeID", rec.VolumeID)
			continue
		}
		// Its kept token first, so that its watches open with it.
		if token, ok := tokens[rec.VolumeID]; ok {
			d.reads.holdAll(spec, rec.VolumeID, token)
		}
		d.node.serve(spec, desired, true)
		d.node.published[rec.VolumeID] = rec
	}
	d.forgetUnservedTokens(logger, tokens)
	if len(records) > 0 {
		logger.Info("Restored the published volumes", "volumes", len(d.node.published), "records", len(records), "tokens", len(tokens))
	}
	return len(d.node.published)
}

// keptTokens are the tokens kept before a restart (tokenKeeper), by
// volume id.
func (d *Driver) keptTokens(logger klog.Logger) map[string]podToken {
	tokens, errs := d.node.tokens.load(d.clock.Now())
	for _, err := range errs {
		logger.Error(err, "A kept token is lost; its volume waits for the kubelet's next publish call")
	}
	return tokens
}

// forgetUnservedTokens removes the kept tokens of volumes not served
// again: their records were dropped, or never written (a restart while
// the volume was being published).
func (d *Driver) forgetUnservedTokens(logger klog.Logger, tokens map[string]podToken) {
	for volumeID := range tokens {
		if _, served := d.node.published[volumeID]; served {
			continue
		}
		if err := d.node.tokens.forget(volumeID); err != nil {
			logger.Error(err, "Removing the kept token of a volume not served")
		}
	}
}

// unreadableRecord says, in the log and in a Warning event on this node,
// that a record could not be read and where it went: its volume is not
// served, and an unpublish of it removes what the writer's layout shows to
// be the driver's (removeUnknownTarget).
func (d *Driver) unreadableRecord(logger klog.Logger, err error) {
	logger.Error(err, "A volume record cannot be read; its volume is not served")
	d.nodeWarning("VolumeRecordUnreadable", fmt.Sprintf("%v: its volume is not served", err))
}

// unkeptTokens says, in the log and in a Warning event on this node, that
// the token directory cannot be used: every volume is served, but a
// restarted driver waits for the kubelet's next publish call of each.
func (d *Driver) unkeptTokens(logger klog.Logger) {
	if d.tokenDirErr == nil {
		return
	}
	logger.Error(d.tokenDirErr, "Keeping no pod's token: after a restart, each volume waits for the kubelet's next publish call")
	d.nodeWarning("TokenDirUnusable", fmt.Sprintf("%v; keeping no pod's token: after a restart, each volume waits for the kubelet's next publish call", d.tokenDirErr))
}

// nodeWarning posts a Warning event on this node, where events are posted.
func (d *Driver) nodeWarning(reason, message string) {
	if d.opts.Events != nil {
		node := &corev1.ObjectReference{Kind: "Node", Name: d.opts.NodeName, UID: types.UID(d.opts.NodeName)}
		d.opts.Events.Eventf(node, corev1.EventTypeWarning, reason, "%s", message)
	}
}
