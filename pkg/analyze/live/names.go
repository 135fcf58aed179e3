package live

import "unique"

// Each pod decoded from the API holds its own copy of every string; on a
// cluster of 300,000 pods that read the same few ConfigMaps by name, the
// pods' entries and the analysis's parts keep one copy of each name they
// repeat instead: their namespaces and nodes, and in their unpacked entries
// (unpackPod) the objects they reference, their volumes' and containers'
// names and the keys they name.
//
// The copy is Go's unique package's canonical one. It stays canonical while
// a handle of it is alive, and a pod entry holds its namespace's and
// node's handles (podEntry), so those are shared for as long as any pod
// uses them; a name no entry holds a handle of is shared by the entries
// unpacked while it is canonical, and is forgotten with the last handle,
// so nothing here grows with names long gone.

// sharedBytes is the canonical copy of the name b spells.
func sharedBytes(b []byte) string { return unique.Make(string(b)).Value() }
