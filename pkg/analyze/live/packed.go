package live

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// A served pod's entry keeps its inventory entry packed into one byte
// slice (packPod), unpacked when its node's part is computed again
// (unpackPod). A PodInfo is a tree of a dozen slices and twice as many
// strings: at 300,000 pods, hundreds of megabytes that the collector
// walks at every cycle. Packed, it is one allocation it never looks into,
// of about a third of the size.
//
// The layout: lengths and counts as uvarints, strings as a length and
// their bytes, flags as one byte, times as Unix seconds and nanoseconds
// (a zero time as a zero flag). The pod's namespace, name and node are
// the entry's, not packed.

// packer appends a pod's fields to a byte slice.
type packer struct{ b []byte }

func (p *packer) uint(v int) { p.b = binary.AppendUvarint(p.b, uint64(v)) }

func (p *packer) bool(v bool) {
	if v {
		p.b = append(p.b, 1)
	} else {
		p.b = append(p.b, 0)
	}
}

func (p *packer) string(s string) {
	p.uint(len(s))
	p.b = append(p.b, s...)
}

func (p *packer) time(t time.Time) {
	p.bool(!t.IsZero())
	if !t.IsZero() {
		p.b = binary.AppendVarint(p.b, t.Unix())
		p.uint(t.Nanosecond())
	}
}

func (p *packer) refs(refs []podrefs.Ref) {
	p.uint(len(refs))
	for _, r := range refs {
		p.bool(r.Kind == model.Secret)
		p.string(r.Name)
		p.bool(r.Optional)
		p.bool(r.Keys != nil)
		p.uint(len(r.Keys))
		for _, k := range r.Keys {
			p.string(k)
		}
	}
}

// ownedVolumes packs the volumes that ask for their files' owner.
func (p *packer) ownedVolumes(volumes []podrefs.OwnedVolume) {
	p.uint(len(volumes))
	for _, v := range volumes {
		p.string(v.Name)
		p.uint(len(v.Fields))
		for _, f := range v.Fields {
			p.string(f)
		}
	}
}

// packPod packs info.
func packPod(info inventory.PodInfo) []byte {
	p := &packer{b: make([]byte, 0, 256)}
	refs := info.Refs
	p.uint(len(refs.Volumes))
	for _, v := range refs.Volumes {
		p.string(v.Name)
		p.bool(v.Secret)
		p.refs(v.Reads)
	}
	p.refs(refs.ImagePullSecrets)
	p.uint(len(refs.Containers))
	for _, c := range refs.Containers {
		p.string(c.Name)
		p.uint(len(c.SubPaths))
		for _, m := range c.SubPaths {
			p.string(m.Volume)
			p.string(m.MountPath)
			p.string(m.SubPath)
			p.refs(m.Reads)
			p.bool(m.Driver)
		}
		p.refs(c.Env)
	}
	p.uint(len(refs.DriverVolumes))
	for _, v := range refs.DriverVolumes {
		p.string(v.Name)
		p.refs(v.Reads)
		p.bool(v.InPlace)
	}
	p.uint(len(info.Started))
	for _, s := range info.Started {
		p.string(s.Container)
		p.time(s.At)
	}
	p.time(info.FirstStarted)
	p.uint(len(info.Unconverted))
	for _, u := range info.Unconverted {
		p.string(u.Volume)
		p.bool(u.SecretsMode)
	}
	p.bool(info.Converted)
	p.string(info.Workload)
	p.uint(len(refs.RefusedDriverVolumes))
	for _, v := range refs.RefusedDriverVolumes {
		p.string(v.Name)
		p.string(v.ConfigMap)
		p.string(v.Problem)
	}
	p.bool(info.WaitingForVolumes)
	p.ownedVolumes(refs.OwnedVolumes)
	p.time(info.Created)
	// Exactly its size: it is kept as long as the pod.
	return append([]byte(nil), p.b...)
}

// unpacker reads what packer wrote. The names pods repeat are shared
// (names.go: the parts keep them); a malformed slice, which only a bug makes,
// panics with what was read.
type unpacker struct {
	b []byte
}

func (u *unpacker) uint() int {
	v, n := binary.Uvarint(u.b)
	if n <= 0 {
		panic(fmt.Sprintf("packed pod entry: malformed uvarint at %d bytes from the end", len(u.b)))
	}
	u.b = u.b[n:]
	return int(v)
}

func (u *unpacker) bool() bool {
	v := u.b[0]
	u.b = u.b[1:]
	return v == 1
}

func (u *unpacker) bytes() []byte {
	n := u.uint()
	s := u.b[:n]
	u.b = u.b[n:]
	return s
}

// name is a repeated name, shared (names.go); own, a string of this pod
// alone.
func (u *unpacker) name() string { return sharedBytes(u.bytes()) }
func (u *unpacker) own() string  { return string(u.bytes()) }

func (u *unpacker) time() time.Time {
	if !u.bool() {
		return time.Time{}
	}
	sec, n := binary.Varint(u.b)
	if n <= 0 {
		panic("packed pod entry: malformed time")
	}
	u.b = u.b[n:]
	// Local, as the API's times are decoded (metav1.Time).
	return time.Unix(sec, int64(u.uint())).Local()
}

func (u *unpacker) refs() []podrefs.Ref {
	n := u.uint()
	if n == 0 {
		return nil
	}
	refs := make([]podrefs.Ref, n)
	for i := range refs {
		r := &refs[i]
		r.Kind = model.ConfigMap
		if u.bool() {
			r.Kind = model.Secret
		}
		r.Name, r.Optional = u.name(), u.bool()
		hasKeys, keys := u.bool(), u.uint()
		if hasKeys {
			r.Keys = make([]string, keys)
			for j := range r.Keys {
				r.Keys[j] = u.name()
			}
		}
	}
	return refs
}

// unpackPod is the inventory entry of pod namespace/name on node that
// packPod packed into b.
func unpackPod(namespace, name, node string, b []byte) inventory.PodInfo {
	u := &unpacker{b: b}
	info := inventory.PodInfo{Namespace: namespace, Name: name, Node: node}
	info.Refs.Volumes = sliceOf(u.uint(), func() podrefs.Volume {
		return podrefs.Volume{Name: u.name(), Secret: u.bool(), Reads: u.refs()}
	})
	info.Refs.ImagePullSecrets = u.refs()
	info.Refs.Containers = sliceOf(u.uint(), func() podrefs.Container {
		c := podrefs.Container{Name: u.name()}
		c.SubPaths = sliceOf(u.uint(), func() podrefs.SubPathMount {
			return podrefs.SubPathMount{Volume: u.name(), MountPath: u.own(), SubPath: u.own(), Reads: u.refs(), Driver: u.bool()}
		})
		c.Env = u.refs()
		return c
	})
	info.Refs.DriverVolumes = sliceOf(u.uint(), func() podrefs.DriverVolume {
		return podrefs.DriverVolume{Name: u.name(), Reads: u.refs(), InPlace: u.bool()}
	})
	info.Started = sliceOf(u.uint(), func() inventory.ContainerStart {
		return inventory.ContainerStart{Container: u.name(), At: u.time()}
	})
	info.FirstStarted = u.time()
	info.Unconverted = sliceOf(u.uint(), func() inventory.UnconvertedVolume {
		return inventory.UnconvertedVolume{Volume: u.name(), SecretsMode: u.bool()}
	})
	info.Converted = u.bool()
	info.Workload = u.own()
	info.Refs.RefusedDriverVolumes = sliceOf(u.uint(), func() podrefs.RefusedDriverVolume {
		return podrefs.RefusedDriverVolume{Name: u.name(), ConfigMap: u.name(), Problem: u.own()}
	})
	info.WaitingForVolumes = u.bool()
	info.Refs.OwnedVolumes = sliceOf(u.uint(), func() podrefs.OwnedVolume {
		return podrefs.OwnedVolume{Name: u.name(), Fields: sliceOf(u.uint(), u.own)}
	})
	info.Created = u.time()
	if len(u.b) != 0 {
		panic(fmt.Sprintf("packed pod entry of %s/%s: %d bytes left over", namespace, name, len(u.b)))
	}
	return info
}

// sliceOf is n values that next reads in turn, nil for none (as the
// entry's slices are where empty).
func sliceOf[T any](n int, next func() T) []T {
	if n == 0 {
		return nil
	}
	out := make([]T, n)
	for i := range out {
		out[i] = next()
	}
	return out
}
