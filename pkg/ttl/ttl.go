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
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTTL is used when the Node gives no valid TTL, as in the kubelet.
const DefaultTTL = time.Minute

// Annotation is the Node annotation written by the TTL controller.
const Annotation = corev1.ObjectTTLAnnotationKey

// FromAnnotations reads the TTL from a Node's annotations, or says why
// there is none: the kubelet then uses DefaultTTL, and so does whoever
// predicts it (nodeagent analyze, compare's model).
func FromAnnotations(annotations map[string]string) (time.Duration, error) {
	value, ok := annotations[Annotation]
	if !ok {
		return 0, fmt.Errorf("no %s annotation", Annotation)
	}
	seconds, err := strconv.Atoi(value)
	if err != nil {
		return 0, fmt.Errorf("%s=%q is not a whole number of seconds", Annotation, value)
	}
	return time.Duration(seconds) * time.Second, nil
}

// OrDefault is the TTL an agent uses on a node whose annotations give ttl,
// or err: ttl, or DefaultTTL where err says there is none.
func OrDefault(ttl time.Duration, err error) time.Duration {
	if err != nil {
		return DefaultTTL
	}
	return ttl
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
		return OrDefault(FromAnnotations(node.Annotations))
	}
}
