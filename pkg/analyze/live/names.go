package live

import (
	"strings"
	"sync"
)

// names keeps one copy of each name the pods' entries repeat: their
// namespaces and nodes, and in their unpacked entries (unpackPod) the
// objects they reference, their volumes' and containers' names and the
// keys they name, which the analysis's parts keep. Each pod decoded from
// the API holds its own copy of every string; on a cluster of 300,000
// pods that read the same few ConfigMaps by name, one copy each.
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

// of is s's one copy; n.mu held.
func (n *names) of(s string) string {
	if c, ok := n.known[s]; ok {
		return c
	}
	if n.known == nil || len(n.known) >= maxNames {
		n.known = make(map[string]string, 1024)
	}
	// A copy of its own: s may be part of a larger string.
	s = strings.Clone(s)
	n.known[s] = s
	return s
}

// share is s's one copy.
func (n *names) share(s string) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.of(s)
}

// ofBytes is the one copy of the name b spells: made only where n has none.
func (n *names) ofBytes(b []byte) string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c, ok := n.known[string(b)]; ok {
		return c
	}
	return n.of(string(b))
}
