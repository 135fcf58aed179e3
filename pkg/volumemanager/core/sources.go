package core

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// A source that asks for volumes one at a time (the CSI driver's publish
// calls) uses the core's own parts: AddVolume and RemoveVolume change what
// it wants, RestoreVolume rebuilds at start what it had on disk, and
// WaitForVolume and WaitForVolumeGone wait for the reconciler to bring the
// disk there. The core serializes the changes (sourceMu), so two volumes
// of one pod may be added at once. A core has one source: these calls, or
// a populator of its own (the pods source), never both.

// SourcePollInterval is how often WaitForVolume and WaitForVolumeGone look
// at the actual state. A pod's start waits on a publish call, and nothing
// here needs the pod workers' alignment (waitPollInterval): the call ends
// within 20 ms of the reconciler's write.
const SourcePollInterval = 20 * time.Millisecond

// AddVolume wants v, beside the other volumes wanted of v's pod; a volume
// of the same key is replaced. v.Dir must be set.
func (c *Core) AddVolume(v cache.DesiredVolume) {
	c.sourceMu.Lock()
	defer c.sourceMu.Unlock()
	volumes := c.desired.PodVolumes(v.Key.PodUID)
	replaced := false
	for i := range volumes {
		if volumes[i].Key == v.Key {
			volumes[i], replaced = v, true
		}
	}
	if !replaced {
		volumes = append(volumes, v)
	}
	c.reconciler.HandOver(c.desired.SetPodVolumes(v.Key.PodUID, volumes, nil)...)
}

// RestoreVolume is AddVolume for a volume set up before a restart: if its
// directory is on disk, the actual state holds it from now on, flagged for
// a remount, so that the reconciler brings its files up to date, and a
// RemoveVolume before that remount removes them (a volume only in the
// desired state would be dropped with its files left behind).
func (c *Core) RestoreVolume(v cache.DesiredVolume) {
	if info, err := os.Stat(v.Dir); err == nil && info.IsDir() {
		c.actual.AddFound(cache.MountedVolume{Key: v.Key, Request: v.Request, Spec: v.Spec, Dir: v.Dir, RemountRequired: true})
	}
	c.AddVolume(v)
}

// RemoveVolume no longer wants key; the reconciler removes its directory.
func (c *Core) RemoveVolume(key cache.VolumeKey) {
	c.sourceMu.Lock()
	defer c.sourceMu.Unlock()
	volumes := c.desired.PodVolumes(key.PodUID)
	kept := volumes[:0]
	for _, v := range volumes {
		if v.Key != key {
			kept = append(kept, v)
		}
	}
	if len(kept) == len(volumes) {
		return
	}
	c.reconciler.HandOver(c.desired.SetPodVolumes(key.PodUID, kept, nil)...)
}

// WaitForVolume waits until key is on disk, or an operation on it that
// started after the call began fails: then it returns that operation's
// error, and the reconciler keeps retrying while the volume is wanted. An
// operation already running when the call began (a retry for an earlier
// wish for the same volume) does not count: it may have read the world as
// it was before.
func (c *Core) WaitForVolume(ctx context.Context, key cache.VolumeKey) error {
	start := c.clock.Now()
	var failed error
	err := c.WaitEvery(ctx, SourcePollInterval, c.opts.MountTimeout, func() (bool, string) {
		if c.actual.Has(key) {
			return true, ""
		}
		if f, ok := c.reconciler.Failure(key); ok && !f.Started.Before(start) {
			failed = f.Err
			return true, f.Err.Error()
		}
		return false, fmt.Sprintf("volume %s is not on disk yet", key.Volume)
	})
	if err != nil {
		return err
	}
	return failed
}

// WaitForVolumeGone waits until key is no longer on disk and no operation
// on it runs: a mount in flight when the source let the volume go would
// write its files after the wait, and only then be unmounted.
func (c *Core) WaitForVolumeGone(ctx context.Context, key cache.VolumeKey) error {
	return c.WaitEvery(ctx, SourcePollInterval, c.opts.MountTimeout, func() (bool, string) {
		if c.reconciler.InFlight(key) {
			return false, fmt.Sprintf("an operation on volume %s is in flight", key.Volume)
		}
		if !c.actual.Has(key) {
			return true, ""
		}
		msg := fmt.Sprintf("volume %s is still on disk", key.Volume)
		if f, ok := c.reconciler.Failure(key); ok {
			msg += ": " + f.Err.Error()
		}
		return false, msg
	})
}

// WaitEvery evaluates done at once and then every interval, until it
// holds, ctx ends or timeout passes; the error says what done last said.
func (c *Core) WaitEvery(ctx context.Context, interval, timeout time.Duration, done func() (bool, string)) error {
	// In steady state the first look succeeds: no timer, no ticker.
	if ok, _ := done(); ok {
		return nil
	}
	timer := c.clock.NewTimer(timeout)
	defer timer.Stop()
	poll := c.clock.NewTicker(interval)
	defer poll.Stop()
	for {
		ok, why := done()
		if ok {
			return nil
		}
		select {
		case <-poll.C():
		case <-ctx.Done():
			return fmt.Errorf("%s: %w", why, ctx.Err())
		case <-timer.C():
			return fmt.Errorf("timed out after %s: %s", timeout, why)
		}
	}
}
