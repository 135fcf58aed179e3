// Package nodeidentity names a node's client identity: the user and group a
// kubelet authenticates as, which the apiserver's Node authorizer and
// NodeRestriction admission plugin recognise and its audit log records. The
// local control plane issues these identities to simulated nodes, compare's
// agents act as them, and analyze and compare attribute audited requests
// to nodes by them.
package nodeidentity

import "strings"

// userPrefix starts every node's user name: system:node:NAME.
const userPrefix = "system:node:"

// Group is the group of every node's client identity.
const Group = "system:nodes"

// User is the user name of node's client identity.
func User(node string) string { return userPrefix + node }

// Node is the node whose identity user is, if it is a node's.
func Node(user string) (node string, ok bool) { return strings.CutPrefix(user, userPrefix) }
