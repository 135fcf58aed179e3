// Package model predicts the requests a node's kubelet (or nodeagent) sends
// for the ConfigMaps and Secrets its pods reference: GETs per second at the
// apiserver, the share of them that reach etcd, and the watches it keeps
// open. It is the load model of docs/model.md, as pure functions: no
// clients, no clocks, deterministic results.
//
// The input is a description of nodes (Node): each node's pods and the
// objects each pod's volumes read on a remount, the node's sync frequency
// S, its TTL T, and the Behaviour of its kubelet. Predict returns the load
// per object, per node and in total. Contract:
//
//   - Get: every read of every remount is a quorum GET (apiserver = etcd).
//   - EverySync (the kubelet up to v1.28, Cache strategy): one quorum GET
//     per object per node per 1 s sync tick in which at least one of the
//     pods that read it comes due; at T = 0 the tick's other remounts each
//     refresh it again at resourceVersion "0" (apiserver only).
//   - FirstReference (the kubelet from v1.29, Cache strategy): each object
//     cached on a node is refreshed at resourceVersion "0" by the first
//     remount at or after its last fetch + T; etcd sees none of it.
//   - Watch: no GETs, one watch per mutable object per node.
//   - Driver (nodeagent's CSI driver, beside a node's kubelet): one watch
//     per object per node, immutable ones included; an update reaches a
//     volume within the reconciler's half period, not at a sync. Reading as
//     itself it sends no GET; reading as the pods (Node.ReadsAsPods, its
//     default) each volume reads its objects with a quorum GET when
//     published and at each renewal of its pod's token (TokenRenewal).
//
// Sync intervals are X = S·(1 + U[0, 0.5)) plus the wait for the next 1 s
// tick (SyncIntervalMoments). Where no closed form holds (several pods
// sharing an object, T near S) the pods' renewal processes are simulated
// from a fixed seed: the same input gives the same output, within 1 % of
// the expectation.
//
// Steady state only: the first mount of each volume (a quorum GET in every
// behaviour but Watch) and the watches' initial LISTs are not counted.
//
// Which kubelet behaves how is one table, KubeletRules (kubelet.go): a
// release and a strategy in, a Behaviour out. How long an update takes to
// reach a volume is simulated on the same sync process (latency.go,
// updatedelay.go).
package model
