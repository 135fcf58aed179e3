package analyze

import (
	"github.com/nodeagent-io/nodeagent/pkg/model"
)

// The Result's JSON keys are read by tools: add keys freely, never rename
// one.

// Rates is one kind's load.
type Rates struct {
	// APIServerGets is every GET the apiserver answers, per second.
	APIServerGets float64 `json:"apiserverGetsPerSecond"`
	// QuorumGets are the GETs without a resourceVersion among them, which
	// the apiserver reads from etcd.
	QuorumGets float64 `json:"quorumGetsPerSecond"`
	// EtcdReads is the reads that reach etcd, per second.
	EtcdReads float64 `json:"etcdReadsPerSecond"`
	// Watches is the watches kept open.
	Watches int `json:"watches"`
	// WatchRequests is watches opened again per second, after the
	// apiserver ends them at their timeout.
	WatchRequests float64 `json:"watchRequestsPerSecond"`
	// Churn is what pods that come and go cost of the above (their GETs
	// are in APIServerGets and QuorumGets), and the watches they open.
	Churn ChurnRates `json:"churn,omitzero"`
}

// ChurnRates is the part of a load that pods coming and going cause.
type ChurnRates struct {
	APIServerGets float64 `json:"apiserverGetsPerSecond"`
	QuorumGets    float64 `json:"quorumGetsPerSecond"`
	WatchOpens    float64 `json:"watchOpensPerSecond"`
}

func churnRatesOf(c model.ChurnLoad) ChurnRates {
	return ChurnRates{APIServerGets: c.APIServerGetQPS, QuorumGets: c.EtcdGetQPS, WatchOpens: c.WatchOpenQPS}
}

func (a ChurnRates) plus(b ChurnRates) ChurnRates {
	return ChurnRates{APIServerGets: a.APIServerGets + b.APIServerGets, QuorumGets: a.QuorumGets + b.QuorumGets, WatchOpens: a.WatchOpens + b.WatchOpens}
}

func (a ChurnRates) minus(b ChurnRates) ChurnRates {
	return ChurnRates{APIServerGets: a.APIServerGets - b.APIServerGets, QuorumGets: a.QuorumGets - b.QuorumGets, WatchOpens: a.WatchOpens - b.WatchOpens}
}

func ratesOf(l model.Load) Rates {
	return Rates{APIServerGets: l.APIServerGetQPS, QuorumGets: l.EtcdGetQPS, EtcdReads: l.EtcdGetQPS,
		Watches: l.Watches, WatchRequests: l.WatchRequestQPS, Churn: churnRatesOf(l.Churn)}
}

// Kinds is a load split into ConfigMaps and Secrets.
type Kinds struct {
	ConfigMaps Rates `json:"configmaps"`
	Secrets    Rates `json:"secrets"`
}

// Sum is both kinds together.
func (k Kinds) Sum() Rates { return k.ConfigMaps.plus(k.Secrets) }

func (a Rates) plus(b Rates) Rates {
	return Rates{APIServerGets: a.APIServerGets + b.APIServerGets, QuorumGets: a.QuorumGets + b.QuorumGets,
		EtcdReads: a.EtcdReads + b.EtcdReads, Watches: a.Watches + b.Watches, WatchRequests: a.WatchRequests + b.WatchRequests,
		Churn: a.Churn.plus(b.Churn)}
}

func (a Rates) minus(b Rates) Rates {
	return Rates{APIServerGets: a.APIServerGets - b.APIServerGets, QuorumGets: a.QuorumGets - b.QuorumGets,
		EtcdReads: a.EtcdReads - b.EtcdReads, Watches: a.Watches - b.Watches, WatchRequests: a.WatchRequests - b.WatchRequests,
		Churn: a.Churn.minus(b.Churn)}
}

func (k Kinds) plus(o Kinds) Kinds {
	return Kinds{ConfigMaps: k.ConfigMaps.plus(o.ConfigMaps), Secrets: k.Secrets.plus(o.Secrets)}
}

// Result is what analyze found.
type Result struct {
	Cluster Summary  `json:"cluster"`
	Total   Total    `json:"total"`
	WhatIfs []WhatIf `json:"whatIfs"`
	// Nodes are every node, the busiest first.
	Nodes []NodeResult `json:"nodes"`
	// Namespaces and Objects are the top ones by apiserver GET/s, then by
	// watches.
	Namespaces     []NamespaceResult `json:"namespaces"`
	Objects        []ObjectResult    `json:"objects"`
	RootCARotation Rotation          `json:"rootCARotation"`
	// Findings are every pod's (and container's) reasons to hold other
	// content than the API's, or soon to: all of them, whatever --top.
	Findings []Finding       `json:"findings"`
	Summary  FindingsSummary `json:"summary"`
	// Churn is what pods that come and go cost, where some pods arrived
	// in the window (Options.ArrivalWindow; their GETs are in Total too).
	Churn *ChurnResult `json:"churn,omitempty"`
	// Driver is what nodeagent's CSI driver serves and costs, where some
	// pod uses it; its load is not in Total.
	Driver *DriverResult `json:"csiDriver,omitempty"`
	// Warnings say what applies to the whole result: assumptions, lists
	// that were not allowed.
	Warnings []string `json:"warnings,omitempty"`
}

// Summary counts what was read.
type Summary struct {
	Nodes      int `json:"nodes"`
	Pods       int `json:"pods"`
	Namespaces int `json:"namespaces"`
	// NodesFromConfigz is how many nodes' settings came from /configz.
	NodesFromConfigz int  `json:"nodesFromConfigz"`
	SecretsListed    bool `json:"secretsListed"`
	// NamespacesListed is false where namespaces could not be listed, and
	// the notConverted findings are left out.
	NamespacesListed bool `json:"namespacesListed"`
	// Behaviours counts the nodes of each model behaviour.
	Behaviours map[model.Behaviour]int `json:"behaviours"`
}

// FindingsSummary counts the findings.
type FindingsSummary struct {
	// Findings counts them by type, every type included.
	Findings map[FindingType]int `json:"findings"`
}

// Total is the whole cluster's load, predicted and, with --measure,
// measured.
type Total struct {
	Predicted Kinds     `json:"predicted"`
	Measured  *Measured `json:"measured,omitempty"`
	// Audited is what an audit log (--audit-log) attributes to the
	// kubelets, summed over the nodes.
	Audited *Audited `json:"audited,omitempty"`
	// UpdateDelay is how long an update of an object takes to reach the
	// volumes that mount it: the median over every volume read in the
	// cluster, and the longest on any node; nil where no volume reads one.
	UpdateDelay *model.Delay `json:"updateDelaySeconds,omitempty"`
	// UpdateDelayNodes are the nodes where the longest is that long.
	UpdateDelayNodes []string `json:"updateDelayNodes,omitempty"`
}

// NodeResult is one node.
type NodeResult struct {
	Name                 string          `json:"name"`
	KubeletVersion       string          `json:"kubeletVersion"`
	Strategy             model.Strategy  `json:"strategy"`
	SyncFrequencySeconds float64         `json:"syncFrequencySeconds"`
	TTLSeconds           float64         `json:"ttlSeconds"`
	SettingsSource       Source          `json:"settingsSource"`
	Behaviour            model.Behaviour `json:"behaviour"`
	Pods                 int             `json:"pods"`
	Predicted            Kinds           `json:"predicted"`
	// UpdateDelay is the time from an update to its content in a volume
	// on this node: the median over its volume reads, and the longest.
	UpdateDelay *model.Delay `json:"updateDelaySeconds,omitempty"`
	// Measured is what the audit log attributes to the node's kubelet.
	Measured *Kinds   `json:"measured,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// NamespaceResult is the load of the objects of one namespace.
type NamespaceResult struct {
	Namespace string `json:"namespace"`
	Predicted Kinds  `json:"predicted"`
}

// ObjectResult is the load of one object, over the nodes that read it.
type ObjectResult struct {
	Kind      model.Kind `json:"kind"`
	Namespace string     `json:"namespace"`
	Name      string     `json:"name"`
	Immutable bool       `json:"immutable"`
	Missing   bool       `json:"missing"`
	Nodes     int        `json:"nodes"`
	Predicted Rates      `json:"predicted"`
	// UpdateDelay is the longest over the nodes that mount it.
	UpdateDelay *model.Delay `json:"updateDelaySeconds,omitempty"`
}

// WhatIf is the cluster's predicted load after one change.
type WhatIf struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Nodes is how many nodes the change touches.
	Nodes     int   `json:"nodes"`
	Predicted Kinds `json:"predicted"`
	// Baseline, where set, is what Predicted compares with in place of
	// Total.Predicted: for move-to-driver, which counts the driver's
	// watches, the kubelets' load now and the driver's now.
	Baseline *Kinds `json:"baseline,omitempty"`
	// UpdateDelay is the cluster's update delay after the change.
	UpdateDelay *model.Delay `json:"updateDelaySeconds,omitempty"`
	// DriverUpdateDelay, for move-to-driver, is the moved volumes'; and
	// ClearsFindings the subPathNeverUpdated findings it clears.
	DriverUpdateDelay *model.Delay `json:"driverUpdateDelaySeconds,omitempty"`
	ClearsFindings    int          `json:"clearsFindings,omitempty"`
	Caveat            string       `json:"caveat,omitempty"`
	// MovableNamespaces and MovableWorkloads count, for move-to-driver,
	// the namespaces and workloads with a volume that could move;
	// Namespaces and Workloads are the top of each by the kubelets' GETs
	// saved, each as if it moved alone.
	MovableNamespaces int         `json:"movableNamespaces,omitempty"`
	MovableWorkloads  int         `json:"movableWorkloads,omitempty"`
	Namespaces        []MoveGroup `json:"namespaces,omitempty"`
	Workloads         []MoveGroup `json:"workloads,omitempty"`
}
