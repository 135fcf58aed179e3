package live

import (
	"sync"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs/inventory"
)

// names keeps one copy of each name the pods' entries repeat: their
// namespaces and nodes, the objects they reference, their volumes' and
// containers' names and the keys they name. Each pod decoded from the
// API holds its own copy of every string; on a cluster of 300,000 pods
// that read the same few ConfigMaps by name, one copy each saves about a
// sixth of what an entry holds.
//
// It forgets every name once it holds maxNames (names of namespaces,
// nodes and objects long gone would otherwise stay): the entries keep
// theirs, and later entries share new copies.
type names struct {
	mu    sync.Mutex
	known map[string]string
}

// maxNames bounds names: a 10,000-node cluster's pods repeat some 15,000.
const maxNames = 1 << 16

// of is s's one copy.
func (n *names) of(s string) string {
	if c, ok := n.known[s]; ok {
		return c
	}
	if n.known == nil || len(n.known) >= maxNames {
		n.known = make(map[string]string, 1024)
	}
	n.known[s] = s
	return s
}

// share makes p's repeated names the copies n keeps.
func (n *names) share(p *inventory.PodInfo) {
	n.mu.Lock()
	defer n.mu.Unlock()
	p.Namespace, p.Node = n.of(p.Namespace), n.of(p.Node)
	for i := range p.Refs.Volumes {
		v := &p.Refs.Volumes[i]
		v.Name = n.of(v.Name)
		n.refs(v.Reads)
	}
	for i := range p.Refs.DriverVolumes {
		v := &p.Refs.DriverVolumes[i]
		v.Name = n.of(v.Name)
		n.refs(v.Reads)
	}
	for i := range p.Refs.Containers {
		c := &p.Refs.Containers[i]
		c.Name = n.of(c.Name)
		n.refs(c.Env)
		for j := range c.SubPaths {
			m := &c.SubPaths[j]
			m.Volume = n.of(m.Volume)
		}
	}
	n.refs(p.Refs.ImagePullSecrets)
	for i := range p.Started {
		p.Started[i].Container = n.of(p.Started[i].Container)
	}
	for i := range p.Unconverted {
		u := &p.Unconverted[i]
		u.Volume, u.ConfigMap = n.of(u.Volume), n.of(u.ConfigMap)
	}
}

func (n *names) refs(refs []podrefs.Ref) {
	for i := range refs {
		refs[i].Name = n.of(refs[i].Name)
		for j := range refs[i].Keys {
			refs[i].Keys[j] = n.of(refs[i].Keys[j])
		}
	}
}
