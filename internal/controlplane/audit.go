package controlplane

// auditPolicy records, at Metadata level (who, what, which URI; no
// bodies, so never a Secret's data), every get, list and watch of a
// ConfigMap or a Secret, and nothing else: it is what attributes their
// load to the node that sent it (pkg/auditlog). RequestReceived is left out, so a get or list is one
// ResponseComplete event, and a watch is one ResponseStarted event when it
// opens and one ResponseComplete when it ends.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["get", "list", "watch"]
  resources:
  - group: ""
    resources: ["configmaps", "secrets"]
- level: None
`
