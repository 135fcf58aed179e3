package core

import (
	"sort"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// State is what /debug/volumes says of a volume.
type State string

const (
	StateMounted        State = "mounted"
	StateRemountPending State = "remount-pending"
	StateMountFailing   State = "mount-failing"
)

// VolumeStatus is one volume as /debug/volumes shows it.
type VolumeStatus struct {
	PodUID          string         `json:"podUID"`
	Pod             string         `json:"pod,omitempty"`
	Volume          string         `json:"volume"`
	Plugin          podrefs.Plugin `json:"plugin"`
	ConfigMaps      []string       `json:"configMaps,omitempty"`
	Secrets         []string       `json:"secrets,omitempty"`
	Path            string         `json:"path"`
	State           State          `json:"state"`
	ResourceVersion string         `json:"resourceVersion,omitempty"`
	ContentHash     string         `json:"contentHash,omitempty"`
	LastError       string         `json:"lastError,omitempty"`
	// RetryAt is when the reconciler tries a failing volume again, unless
	// an object it reads changes first.
	RetryAt *time.Time `json:"retryAt,omitempty"`
	// NotServed lists the projected sources left out of the volume
	// (service-account tokens, Secrets, ...): nodeagent does not serve
	// them, and they never fail the volume.
	NotServed []string `json:"notServed,omitempty"`
}

// Volumes lists every volume on disk, and every desired volume that is
// failing to mount, sorted by pod UID and volume name.
func (c *Core) Volumes() []VolumeStatus {
	failures := c.reconciler.Failures()
	var out []VolumeStatus
	for _, v := range c.actual.List() {
		s := VolumeStatus{
			PodUID: string(v.Key.PodUID), Volume: v.Key.Volume, Plugin: v.Spec.Plugin, Path: v.Dir, State: StateMounted,
			ResourceVersion: v.ResourceVersion, ContentHash: v.ContentHash,
		}
		if f, failing := failures[v.Key]; failing {
			s.LastError, s.RetryAt = errorText(f.Err), &f.RetryAt
		}
		if v.RemountRequired {
			s.State = StateRemountPending
		}
		if v.Request != nil {
			s.Pod = v.Request.SubjectName()
			c.describeSources(&s, v.Spec)
		}
		out = append(out, s)
	}
	for key, f := range failures {
		if c.actual.Has(key) {
			continue
		}
		s := VolumeStatus{PodUID: string(key.PodUID), Volume: key.Volume, State: StateMountFailing, LastError: errorText(f.Err), RetryAt: &f.RetryAt}
		if want, ok := c.desired.Get(key); ok && !want.Keep() {
			s.Pod = want.Request.SubjectName()
			s.Plugin, s.Path = want.Spec.Plugin, want.Dir
			c.describeSources(&s, want.Spec)
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].PodUID != out[j].PodUID {
			return out[i].PodUID < out[j].PodUID
		}
		return out[i].Volume < out[j].Volume
	})
	return out
}

// errorText is err's message, "" for nil.
func errorText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// describeSources fills in the objects a volume reads and the sources it
// leaves out.
func (c *Core) describeSources(s *VolumeStatus, v podrefs.KeptVolume) {
	s.ConfigMaps, s.Secrets, s.NotServed = v.ConfigMapNames(), v.SecretNames(), v.NotServed(c.opts.Secrets != nil)
}
