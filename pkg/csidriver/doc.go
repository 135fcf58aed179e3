// Package csidriver is nodeagent's CSI node plugin: it serves pods'
// inline ephemeral csi volumes of driver configmaps.nodeagent.io with the
// files of a ConfigMap of the pod's namespace (in the Secrets mode, of a
// Secret, or of a projected volume's ConfigMap and Secret sources), and
// keeps them up to date within a reconciler pass of each change
// (docs/csi.md).
//
// Contract:
//
//   - Services: Identity (GetPluginInfo, GetPluginCapabilities: none,
//     Probe) and Node (NodeGetInfo, NodeGetCapabilities: VOLUME_MOUNT_GROUP,
//     NodePublishVolume, NodeUnpublishVolume), on a unix socket; and the
//     kubelet's plugin registration service on a second socket in the
//     kubelet's plugins_registry directory (registration.go), so no
//     registrar sidecar is needed.
//   - Attributes (attributes.go, podrefs.ParseDriverAttributes): one of
//     configMap, secret and sources; optional, defaultMode, defaultUser,
//     items, updates (atomic | inPlace); anything else but the kubelet's
//     csi.storage.k8s.io/ keys is refused, and so is a namespace: a volume
//     reads its own pod's namespace only.
//   - Secrets (Options.Secrets, tmpfs.go): served only in the Secrets
//     mode, read as the pod (FailedPrecondition otherwise), each volume
//     that reads one on a tmpfs mounted at its target path before its
//     files are written and unmounted after they are removed, so that no
//     Secret byte reaches the node's disk; the records never hold one.
//   - Publish is idempotent: the same call again succeeds at once; the same
//     volume id with other attributes is AlreadyExists. It returns when the
//     files are on disk, or with NotFound (no such ConfigMap), Unavailable
//     (it cannot be read yet), FailedPrecondition (it lacks a key that
//     items names), InvalidArgument (the call or its attributes) or
//     PermissionDenied (the opt-in access check), and then leaves nothing
//     behind. Unpublish removes the files and the target path; a volume
//     it does not know succeeds.
//   - Load on the apiserver: one watch per object in use on the node,
//     opened by the first volume that names it and closed with the last
//     (configmapcache.Watches); nothing per pod sync. Reading as the
//     driver, no GET ever; reading as the pods (ReadAsPod, reads.go), one
//     GET per new volume, its pod's own read with its token.
//   - Identity (ReadAs): the driver's own service account, or each
//     volume's pod's, whose token the kubelet passes in every publish call
//     (tokens.go): a pod that may not get its ConfigMap is refused with
//     PermissionDenied, and each watch authenticates with a token of a pod
//     whose read succeeded, renewed before it expires or its pod goes
//     (credentials.go). Tokens are never recorded, logged or shown; each
//     volume's is kept on a tmpfs for the driver's next start, where
//     TokenDir says (tokenkeep.go).
//   - Updates: the volumes live in a volume core of the driver's own
//     (core.Core: no pods, no populator, no directory scan),
//     whose only source is the publish calls; every change a
//     watch delivers remounts the volumes of that ConfigMap at once, not
//     at the next 100 ms tick (reconciler.WakeAtOnce). A deleted ConfigMap keeps the last content
//     (a FailedMount event on the pod says why); a recreated one, immutable
//     or not, reaches every volume.
//   - Restarts: a record per published volume in the state directory
//     (state.go) lets a restarted driver serve every volume again before it
//     answers a call (the kubelet never publishes an ephemeral volume
//     twice); the core holds each recorded volume on disk from the start
//     (RestoreVolume), so an unpublish before its first remount removes
//     its files. Reading as the pods, the kept tokens open the restored
//     volumes' watches at once.
package csidriver
