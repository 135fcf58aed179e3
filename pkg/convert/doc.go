// Package convert decides which configMap volumes of a pod spec become
// volumes of the CSI driver configmaps.nodeagent.io, and how, so that a
// workload's configuration reaches its containers as the driver serves it
// without anyone editing it by hand (docs/csi.md, "Without editing
// workloads"). Plan decides (the admission webhook patches its decisions
// by index), PodSpec converts a decoded pod spec in place, and
// convert/manifest edits users' YAML with the same decisions; PlanRevert
// moves the driver's volumes back.
//
// Contract:
//
//   - A configMap volume becomes a csi volume of the driver: each field of
//     the ConfigMapVolumeSource as its attribute (configMap, optional,
//     defaultMode in octal, items as JSON), readOnly: true, and updates:
//     inPlace when a container mounts part of the volume with subPath or
//     subPathExpr (a subPath of an atomic volume never changes). The
//     result is checked with the driver's own parser
//     (podrefs.ParseDriverAttributes) and must ask for the same files as
//     the volume it replaces; anything else is left as it was, with the
//     reason.
//   - A volume that carries a field k8s.io/api does not know (a newer
//     apiserver's) is left as it was, the field named (KeepUnknown): the
//     driver's volume is written from the known fields alone.
//   - Left as they are, with their reason: projected, secret and every
//     other kind of volume, the volumes of Windows pods (the driver runs on
//     Linux nodes), and those the caller does not choose.
package convert
