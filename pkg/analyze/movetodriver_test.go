package analyze

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// move-to-driver moves every configMap volume the driver can serve: the
// kubelets' GETs for them go, the driver's watches come (one per ConfigMap
// per node), the moved volumes' delay is the driver's, and the subPath
// finding on one of them is cleared; the cluster itself is not changed.
func TestMoveToDriver(t *testing.T) {
	w := newFindingsWorld()
	w.node("n1", model.StrategyCache)
	w.configMap("cfg", false, t0, time.Time{})
	w.configMap("site", false, t0, time.Time{})
	w.pod("web", "n1", t1, mount("conf", "nginx.conf"), cmVolume("conf", "cfg", false))
	w.pod("shop", "n1", t1, mount("site", ""), cmVolume("site", "site", false))
	c := Cluster{Inventory: w.inv, Settings: w.settings}
	r := Predict(c, 10)
	var move *WhatIf
	for i := range r.WhatIfs {
		if r.WhatIfs[i].Name == "move-to-driver" {
			move = &r.WhatIfs[i]
		}
	}
	if move == nil {
		t.Fatalf("no move-to-driver among %+v", r.WhatIfs)
	}
	now, after := r.Total.Predicted.Sum(), move.Predicted.Sum()
	if now.APIServerGets == 0 || after.APIServerGets != 0 || after.Watches != 2 || move.Nodes != 1 || move.ClearsFindings != 1 {
		t.Errorf("now %+v; after the move %+v, %d nodes, clears %d; want no GET, 2 watches (cfg and site on n1), 1 node, 1 finding cleared",
			now, after, move.Nodes, move.ClearsFindings)
	}
	if move.DriverUpdateDelay == nil || move.DriverUpdateDelay.Max >= 1 {
		t.Errorf("the moved volumes' delay %+v, want the driver's, under a second", move.DriverUpdateDelay)
	}
	if move.MovableNamespaces != 1 || move.MovableWorkloads != 2 || len(move.Workloads) != 2 || move.Workloads[0].KubeletsSaved.Sum().APIServerGets == 0 ||
		move.Namespaces[0].DriverAdded.Sum().Watches != 2 || move.Namespaces[0].ClearsFindings != 1 {
		t.Errorf("by namespace %+v, by workload %+v; want ns moving with 2 driver watches and 1 finding cleared, and its two pods' workloads",
			move.Namespaces, move.Workloads)
	}
	var text strings.Builder
	if err := r.WriteText(&text, 10); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Move to the driver, by namespace (top 1 of 1", "Move to the driver, by workload (top 2 of 2", "Pod/web"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks %q:\n%s", want, text.String())
		}
	}
	if r.Driver != nil || len(c.Inventory.Pods[0].Refs.DriverVolumes) != 0 {
		t.Error("the what-if changed the cluster it was asked about")
	}
}

// Where the driver already serves a pod, move-to-driver compares with the
// driver's watches now as well as the kubelets' (its baseline): a volume
// that moves to a ConfigMap the driver already watches on the node saves
// the kubelet's watch and adds none, a change of -1 watch, not +1. Where
// nothing can move, the row says so and changes nothing.
func TestMoveToDriverComparesWithTheDriverNow(t *testing.T) {
	w := newFindingsWorld()
	w.node("n1", model.StrategyWatch)
	w.configMap("cfg", false, t0, time.Time{})
	served := cmVolume("conf", "cfg", false)
	served.VolumeSource = corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: podrefs.DriverName, VolumeAttributes: map[string]string{podrefs.AttrConfigMap: "cfg"}}}
	w.pod("served", "n1", t1, mount("conf", ""), served)
	onlyServed := Predict(Cluster{Inventory: w.inv, Settings: w.settings}, 10)
	w.pod("kubelet", "n1", t1, mount("conf", ""), cmVolume("conf", "cfg", false))
	r := Predict(Cluster{Inventory: w.inv, Settings: w.settings}, 10)

	move := r.WhatIfs[len(r.WhatIfs)-1]
	if move.Name != "move-to-driver" || move.Baseline == nil {
		t.Fatalf("last what-if %+v, want move-to-driver with a baseline", move)
	}
	base, after := move.Baseline.Sum(), move.Predicted.Sum()
	if base.Watches != 2 || after.Watches != 1 {
		t.Errorf("watches: baseline %d (the kubelet's 1 and the driver's 1 now), after %d; want 2 and 1 (the driver's one for both pods)", base.Watches, after.Watches)
	}
	table := r.whatIfTable()
	row := table.Rows[len(table.Rows)-1]
	if got := row[6] + " " + row[7]; got != "1 -50%" {
		t.Errorf("the row's watches and change: %q, want \"1 -50%%\" (%v)", got, row)
	}
	if !strings.Contains(row[8], "moved volumes") {
		t.Errorf("the row's delay %q, want the moved volumes' beside the kubelets'", row[8])
	}

	none := onlyServed.WhatIfs[len(onlyServed.WhatIfs)-1]
	if none.Name != "move-to-driver" || none.Nodes != 0 || !strings.Contains(none.Description, "nothing would move") || none.Predicted != *none.Baseline {
		t.Errorf("with nothing to move: %+v, want a row that says so and changes nothing", none)
	}
}

// In the driver's Secrets mode (DriverSecrets) move-to-driver moves secret
// volumes and projected volumes of ConfigMap and Secret sources too: the
// kubelet's GETs go and the driver watches the Secret instead, the
// subPath mount of the certificate stops being stale, and notConverted
// names them in a namespace opted in to the webhook. Without it they stay
// with the kubelet and notConverted leaves them out.
func TestMoveToDriverInTheSecretsMode(t *testing.T) {
	w := newFindingsWorld()
	w.node("n1", model.StrategyCache)
	w.configMap("cfg", false, t0, time.Time{})
	w.inv.AddObject(model.Secret, "ns", "tls", false)
	w.inv.NamespacesListed, w.inv.OptedIn = true, map[string]bool{"ns": true}
	certs := corev1.Volume{Name: "certs", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "tls"}}}
	bundle := corev1.Volume{Name: "bundle", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
		{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}},
		{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "tls"}}}}}}}
	server := corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "certs", MountPath: "/etc/tls/tls.crt", SubPath: "tls.crt"}, {Name: "bundle", MountPath: "/etc/bundle"}, {Name: "conf", MountPath: "/etc/conf"}}}
	w.pod("server", "n1", t1, server, certs, bundle, cmVolume("conf", "cfg", false))

	for _, tc := range []struct {
		secretsMode                    bool
		moved, watches, cleared, found int
		kubeletGets                    bool
	}{
		{secretsMode: false, moved: 1, watches: 1, cleared: 0, found: 1, kubeletGets: true},
		{secretsMode: true, moved: 3, watches: 2, cleared: 1, found: 3, kubeletGets: false},
	} {
		r := Predict(Cluster{Inventory: w.inv, Settings: w.settings, DriverSecrets: tc.secretsMode}, 10)
		move := r.WhatIfs[len(r.WhatIfs)-1]
		after := move.Predicted
		if !strings.Contains(move.Description, fmt.Sprintf("the %d ", tc.moved)) || after.Sum().Watches != tc.watches ||
			(after.Secrets.APIServerGets > 0) != tc.kubeletGets || (after.ConfigMaps.APIServerGets > 0) != tc.kubeletGets || move.ClearsFindings != tc.cleared {
			t.Errorf("Secrets mode %v: %q, after the move %+v, clears %d; want %d volumes moved, %d watches, the kubelet's GETs (the Secret's, and the ConfigMap's of the projected volume) left %v, %d cleared",
				tc.secretsMode, move.Description, after, move.ClearsFindings, tc.moved, tc.watches, tc.kubeletGets, tc.cleared)
		}
		var notConverted []string
		for _, f := range r.Findings {
			if f.Type == NotConverted {
				notConverted = append(notConverted, string(f.Object.Kind)+"/"+f.Object.Name)
			}
		}
		if len(notConverted) != tc.found {
			t.Errorf("Secrets mode %v: notConverted names %v, want %d volumes", tc.secretsMode, notConverted, tc.found)
		}
	}
}

// Reading as the pods, the driver reads each of its volumes' objects with
// a quorum GET at each renewal of the pod's token: move-to-driver's
// driver side and the driver's own section count them, and reading as
// itself they are none.
func TestTheDriverReadingAsThePodsCountsItsGETs(t *testing.T) {
	w := newFindingsWorld()
	w.node("n1", model.StrategyCache)
	w.configMap("cfg", false, t0, time.Time{})
	w.configMap("site", false, t0, time.Time{})
	w.pod("web", "n1", t1, mount("conf", ""), cmVolume("conf", "cfg", false))
	w.pod("shop", "n1", t1, mount("site", ""), cmVolume("site", "site", false))
	w.pod("shop-2", "n1", t1, mount("site", ""), cmVolume("site", "site", false))
	perVolume := 1 / model.TokenRenewal.Seconds()
	for _, asPods := range []bool{false, true} {
		r := Predict(Cluster{Inventory: w.inv, Settings: w.settings, DriverReadsAsPods: asPods}, 10)
		var move *WhatIf
		for i := range r.WhatIfs {
			if r.WhatIfs[i].Name == "move-to-driver" {
				move = &r.WhatIfs[i]
			}
		}
		want := 0.0
		if asPods {
			want = 3 * perVolume
		}
		after := move.Predicted.Sum()
		if math.Abs(after.APIServerGets-want) > 1e-9 || math.Abs(after.EtcdReads-want) > 1e-9 || math.Abs(after.QuorumGets-want) > 1e-9 || after.Watches != 2 {
			t.Errorf("reading as the pods %v: after the move %+v, want %.5f GET/s at the apiserver and at etcd, 2 watches", asPods, after, want)
		}
		var added float64
		for _, ns := range move.Namespaces {
			added += ns.DriverAdded.Sum().APIServerGets
		}
		if math.Abs(added-want) > 1e-9 {
			t.Errorf("reading as the pods %v: the namespaces' driver adds %.5f GET/s, want %.5f", asPods, added, want)
		}
	}
}
