// Package convert turns the configMap volumes of pod templates in users'
// manifests into volumes of the CSI driver configmaps.nodeagent.io, so that
// a workload's configuration reaches its containers as the driver serves
// it, without anyone editing the manifests by hand (docs/csi.md, "Without
// editing workloads").
//
// Contract:
//
//   - Input: YAML documents (one or many, Lists included, Helm's rendered
//     output as it is). The pod templates of Pod, Deployment, StatefulSet,
//     DaemonSet, ReplicaSet, ReplicationController, Job and CronJob are
//     read; every other object passes through unchanged.
//   - A configMap volume becomes a csi volume of the driver: each field of
//     the ConfigMapVolumeSource as its attribute (configMap, optional,
//     defaultMode in octal, items as JSON), readOnly: true, and updates:
//     inPlace when a container mounts part of the volume with subPath or
//     subPathExpr (a subPath of an atomic volume never changes). The
//     result is checked with the driver's own parser
//     (podrefs.ParseDriverAttributes) and must ask for the same files as
//     the volume it replaces; anything else is left as it was, with the
//     reason.
//   - Left as they are, with their reason: projected, secret and every
//     other kind of volume, the volumes of Windows pods (the driver runs on
//     Linux nodes), and those the Options leave out.
//   - Everything else stays as it was, comments and key order included:
//     the documents are edited as YAML trees (kustomize's kyaml), never
//     decoded and printed again.
package convert
