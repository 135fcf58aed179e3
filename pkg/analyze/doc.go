// Package analyze predicts, for a live cluster, the ConfigMap and Secret
// requests its kubelets send to the apiserver and etcd, node by node and
// object by object, and what each fix would save. It reads the cluster and
// never writes to it.
//
// The pieces, in the order a run uses them:
//
//   - Inventory (inventory.go) lists nodes, pods, ConfigMaps and, where the
//     caller may, Secrets, in pages, keeping of each only what the model
//     needs: never an object's data.
//   - Settings (settings.go, configz.go) is each node's kubelet version,
//     change-detection strategy, sync frequency and TTL: the version and
//     TTL from the Node, the rest from the kubelet's /configz through the
//     apiserver's node proxy where the caller may read it, assumed
//     otherwise, and the result says which.
//   - Predict (predict.go) turns both into the load model's nodes
//     (pkg/model), predicts now and each what-if (whatif.go), and gathers
//     the Result (result.go): totals, nodes, namespaces and objects, split
//     into ConfigMaps and Secrets.
//   - Measure (measure.go) sets beside the prediction what the apiserver
//     counted over a window, and what an audit log attributes to each node.
//
// Render (render.go) writes a Result as text, Markdown, JSON and a chart.
package analyze
