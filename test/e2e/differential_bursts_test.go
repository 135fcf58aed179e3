//go:build e2e

package e2e

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nodeagent-io/nodeagent/pkg/auditlog"
)

// burstGap separates two sync bursts of one ConfigMap. The pods of a node
// that sync in the same pod-worker tick remount within a few hundred
// milliseconds of each other; pods in different ticks are a second or more
// apart.
const burstGap = 500 * time.Millisecond

// meanSyncPeriod is the mean time between two periodic syncs of a pod:
// due S + U[0, 0.5)·S after the last, handed over at the next one-second
// tick (docs/kubelet-behaviour.md, "Pod syncs").
func meanSyncPeriod(s time.Duration) time.Duration {
	return s*5/4 + 500*time.Millisecond
}

// configMapBursts are one node's quorum GETs of one ConfigMap, grouped into
// sync bursts.
type configMapBursts struct {
	gets, bursts int
}

// quorumBursts groups user's quorum GETs of ConfigMaps that exist (404s
// aside) by ConfigMap and into bursts.
//
// Before kubernetes#120255 every pod sync drops the pod's ConfigMaps from
// the cache, so each sync burst sends at least one quorum GET per
// ConfigMap. How many bursts a ConfigMap sees per sync period is the number
// of distinct pod-worker ticks its pods sync in, and that is chance: it
// depends on where each pod's first mount ended relative to the one-second
// tick, for nodeagent and the kubelet alike. How many GETs one burst sends
// is the behaviour under test: registrations that all precede the remounts
// share one GET.
func quorumBursts(gets []auditlog.Get, user string) map[string]configMapBursts {
	last := map[string]time.Time{}
	out := map[string]configMapBursts{}
	sort.SliceStable(gets, func(i, j int) bool { return gets[i].Received.Before(gets[j].Received) })
	for _, g := range gets {
		if g.User != user || !g.Quorum || g.Code >= 400 {
			continue
		}
		b := out[g.Name]
		b.gets++
		if prev, ok := last[g.Name]; !ok || g.Received.Sub(prev) > burstGap {
			b.bursts++
		}
		last[g.Name] = g.Received
		out[g.Name] = b
	}
	return out
}

// checkEverySyncBursts holds the agent's every-sync GETs to the kubelet's
// burst by burst, and each side's bursts to its pods' syncs: at least one
// burst per sync period (rounds of them) for every ConfigMap a pod mounts,
// and at most one per reading pod.
//
// Which ticks the pods settle on is each side's chance at its pods' first
// syncs (one run in three had nodeagent's three pods on three ticks and the
// kubelet's on one), so the two sides' burst counts are not compared; that
// waits end at a poll, which keeps pods that start together on one tick,
// is TestWaitsEndAtAPollNotOnTheMount in pkg/volumemanager.
// readers gives the pods that read each ConfigMap.
func checkEverySyncBursts(agent, kubelet map[string]configMapBursts, readers map[string]int, rounds float64) []string {
	var problems []string
	names := make([]string, 0, len(readers))
	for name := range readers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		for _, side := range []struct {
			who string
			b   configMapBursts
		}{{"nodeagent", agent[name]}, {"kubelet", kubelet[name]}} {
			if lo, hi := 0.9*rounds, 1.1*rounds*float64(readers[name]); float64(side.b.bursts) < lo || float64(side.b.bursts) > hi {
				problems = append(problems, fmt.Sprintf("%s: %s: %d sync bursts over %.0f sync periods, want between %.0f and %.0f",
					name, side.who, side.b.bursts, rounds, lo, hi))
			}
		}
		a, k := agent[name], kubelet[name]
		if a.bursts == 0 || k.bursts == 0 {
			continue
		}
		perA, perK := float64(a.gets)/float64(a.bursts), float64(k.gets)/float64(k.bursts)
		if perA > 1.1*perK+0.05 || perA < perK/1.1-0.05 {
			problems = append(problems, fmt.Sprintf("%s: quorum GETs per sync burst: nodeagent %.2f (%d/%d), kubelet %.2f (%d/%d): more than 10%% apart",
				name, perA, a.gets, a.bursts, perK, k.gets, k.bursts))
		}
	}
	return problems
}

func formatBursts(b map[string]configMapBursts) string {
	var parts []string
	for name, v := range b {
		parts = append(parts, fmt.Sprintf("%s %d GETs in %d bursts", name, v.gets, v.bursts))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}
