package compare

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"time"
)

// The kubelet's update latency, by simulation (docs/model.md, "Update
// latency"): a pod's volume takes a ConfigMap's new content at the
// pod's first remount that reads content fetched after the update.
//
//   - A pod's syncs come every S·(1 + U[0, 0.5)), on the node's next 1 s
//     tick; each remount follows its sync by 50 to 150 ms (the populator
//     and reconciler passes).
//   - every-sync and get fetch at every remount; so does the kubelet's
//     Watch strategy, whose cache is always current: the update lands at
//     the pod's next sync.
//   - first-reference shares one cached copy among the node's pods that
//     mount the ConfigMap, fetched again by the first remount that finds
//     it older than the TTL.
//
// nodeagent's watch mode remounts on the change itself; beside it the
// model gives the kubelet's Watch strategy, which has no such remount.

// remountDelay bounds the time from a sync to its remount.
const minRemountDelay, maxRemountDelay = 0.05, 0.15

// modelLatency returns the median and 99th percentile of the latency the
// kubelet's behaviour for mode gives, with pods pods on a node sharing
// each ConfigMap, and the longest it can take.
func modelLatency(mode Mode, syncFrequency, ttl time.Duration, pods int) (p50, p99, bound float64) {
	s, t := syncFrequency.Seconds(), ttl.Seconds()
	cached := mode.behaviour() == ModeFirstReference
	bound = 1.5*s + 1 + maxRemountDelay
	if cached {
		bound += t
	}
	rng := rand.New(rand.NewPCG(120255, uint64(pods)))
	pods = max(pods, 1)
	horizon := 400 * (1.25*s + 0.5 + t)

	// Every remount of every pod, in time order, and the time of the
	// content it writes.
	type remount struct {
		at      float64
		pod     int
		content float64
	}
	var remounts []remount
	for pod := range pods {
		at := rng.Float64() * (1.25*s + 0.5)
		for at < horizon {
			delay := minRemountDelay + rng.Float64()*(maxRemountDelay-minRemountDelay)
			remounts = append(remounts, remount{at: math.Ceil(at) + delay, pod: pod})
			at = math.Ceil(at) + s*(1+0.5*rng.Float64())
		}
	}
	sort.Slice(remounts, func(i, j int) bool { return remounts[i].at < remounts[j].at })
	fetched := math.Inf(-1)
	byPod := make([][]remount, pods)
	for _, r := range remounts {
		if !cached || r.at-fetched > t {
			fetched = r.at
		}
		r.content = fetched
		byPod[r.pod] = append(byPod[r.pod], r)
	}

	// Updates at random times, away from the horizon's ends.
	var samples []float64
	for range 20000 {
		u := horizon*0.1 + rng.Float64()*horizon*0.8
		list := byPod[rng.IntN(pods)]
		i := sort.Search(len(list), func(i int) bool { return list[i].content >= u })
		if i < len(list) {
			samples = append(samples, list[i].at-u)
		}
	}
	slices.Sort(samples)
	return quantile(samples, 0.5), quantile(samples, 0.99), bound
}
