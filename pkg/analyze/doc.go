// Package analyze predicts, for a live cluster, the ConfigMap and Secret
// requests its kubelets send to the apiserver and etcd, node by node and
// object by object, and what each fix would save; and it finds the
// containers that hold, or will hold, other content than the API's, and
// how long an update takes to reach each node's volumes. It reads the
// cluster and never writes to it.
//
// The pieces, in the order a run uses them:
//
//   - inventory.Inventory (pkg/podrefs/inventory) lists nodes, pods, ConfigMaps
//     and, where the caller may, Secrets, in pages, keeping of each only
//     what the model and the findings need (references, containers' start
//     times, immutability, change times, key names): never an object's
//     data. compare --daemonset reads a cluster's pods through it too.
//   - Settings (settings.go, configz.go) is each node's kubelet version,
//     change-detection strategy, sync frequency and TTL: the version and
//     TTL from the Node, the rest from the kubelet's /configz through the
//     apiserver's node proxy where the caller may read it, assumed
//     otherwise, and the result says which.
//   - Predict (predict.go) turns both into the load model's nodes
//     (pkg/model), predicts now and each what-if (whatif.go), and gathers
//     the Result (result.go): totals, nodes, namespaces and objects, split
//     into ConfigMaps and Secrets, with the update delay of each node,
//     object and what-if (model.DelayOf).
//   - Findings (findings.go) are pure rules over the inventory and the
//     settings: subPath and environment reads never updated, those stale
//     since their container started, immutable objects recreated under a
//     name a Watch node keeps, missing objects and keys.
//   - Measure (measure.go) sets beside the prediction what the apiserver
//     counted over a window, and what an audit log attributes to each node.
//
// Render (render.go, render_findings.go) writes a Result as text,
// Markdown, JSON and a chart.
package analyze
