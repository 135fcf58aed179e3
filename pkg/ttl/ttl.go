// Package ttl reads how long a node agent may cache an object, from the
// node.alpha.kubernetes.io/ttl annotation that the TTL controller keeps on
// every Node (docs/kubelet-behaviour.md, "The TTL").
//
// Contract:
//   - The value is whole seconds. "0" is a real TTL of zero: every read
//     fetches. It does not mean "use the default".
//   - A negative value is taken as it is, as the kubelet takes it: no cached
//     object is ever fresh, so every read fetches.
//   - A missing annotation, an unparsable value, or a Node not (yet) known
//     gives DefaultTTL.
//   - The annotation is read from an informer's cache on every call, so a
//     change made by the TTL controller takes effect at the next freshness
//     check, and no call sends a request to the apiserver.
package ttl

import (
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTTL is used when the Node gives no valid TTL, as in the kubelet.
const DefaultTTL = time.Minute

// Annotation is the Node annotation written by the TTL controller.
const Annotation = corev1.ObjectTTLAnnotationKey

// FromNode returns the TTL a Node's annotation asks for, and whether it
// holds a valid one.
func FromNode(node *corev1.Node) (time.Duration, bool) {
	if node == nil {
		return 0, false
	}
	value, ok := node.Annotations[Annotation]
	if !ok {
		return 0, false
	}
	seconds, err := strconv.Atoi(value)
	if err != nil {
		return 0, false
	}
	return time.Duration(seconds) * time.Second, true
}

// NodeGetter returns the agent's own Node from a local cache, or an error
// when it is not known.
type NodeGetter func() (*corev1.Node, error)

// Reader turns a NodeGetter into the TTL function the ConfigMap cache
// calls on every freshness check.
func Reader(getNode NodeGetter) func() time.Duration {
	return func() time.Duration {
		node, err := getNode()
		if err != nil {
			return DefaultTTL
		}
		if ttl, ok := FromNode(node); ok {
			return ttl
		}
		return DefaultTTL
	}
}
