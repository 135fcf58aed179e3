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
// of one pod may be added at once.

// SourcePollInterval is how often WaitForVolume and WaitForVolumeGone look
// at the actual state. A pod's start waits on a publish call, and nothing
// here needs the pod workers' alignment (waitPollInterval): the call ends
// within 20 ms of the reconciler's write.
const SourcePollInterval = 20 * time.Millisecond

// AddVolume makes source want v, beside the other volumes it wants of
// v's pod; a volume of the same key is replaced. v.Dir must be set. A
// volume another source owns is refused (*cache.OwnedError).
func (c *Core) AddVolume(source cache.Source, v cache.DesiredVolume) error {
	c.sourceMu.Lock()
	defer c.sourceMu.Unlock()
	volumes := c.desired.SourceVolumes(source, v.Key.PodUID)
	replaced := false
	for i := range volumes {
		if volumes[i].Key == v.Key {
			volumes[i], replaced = v, true
		}
	}
	if !replaced {
		volumes = append(volumes, v)
	}
	touched, err := c.desired.SetPodVolumes(source, v.Key.PodUID, volumes, nil)
	c.reconciler.HandOver(touched...)
	return err
}

// RestoreVolume is AddVolume for a volume that source set up before a
// restart: if its directory is on disk, the actual state holds it from now
// on, flagged for a remount, so that the reconciler brings its files up to
// date, and a RemoveVolume before that remount removes them (a volume only
// in the desired state would be dropped with its files left behind).
func (c *Core) RestoreVolume(source cache.Source, v cache.DesiredVolume) error {
	found := false
	if info, err := os.Stat(v.Dir); err == nil && info.IsDir() {
		found = c.actual.AddFound(cache.MountedVolume{Key: v.Key, Request: v.Request, Spec: v.Spec, Dir: v.Dir, RemountRequired: true})
	}
	if err := c.AddVolume(source, v); err != nil {
		if found {
			c.actual.MarkUnmounted(v.Key) // another's: not this source's to keep
		}
		return err
	}
	return nil
}

// RemoveVolume makes source no longer want key; the reconciler removes its
// directory.
func (c *Core) RemoveVolume(source cache.Source, key cache.VolumeKey) {
	c.sourceMu.Lock()
	defer c.sourceMu.Unlock()
	volumes := c.desired.SourceVolumes(source, key.PodUID)
	kept := volumes[:0]
	for _, v := range volumes {
		if v.Key != key {
			kept = append(kept, v)
		}
	}
	if len(kept) == len(volumes) {
		return
	}
	// What a source keeps of its own volumes is never another's.
	touched, _ := c.desired.SetPodVolumes(source, key.PodUID, kept, nil)
	c.reconciler.HandOver(touched...)
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
