package model

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"
)

// The kubelet's update latency, by simulation (docs/model.md, "Update
// latency"): a pod's volume takes an object's new content at the pod's
// first remount that reads content fetched after the update.
//
//   - A pod's syncs come every S·(1 + U[0, 0.5)), on the node's next 1 s
//     tick; each remount follows its sync by 50 to 150 ms (the populator
//     and reconciler passes).
//   - EverySync and Get fetch at every remount; so does the kubelet's Watch
//     strategy, whose cache is always current: the update lands at the
//     pod's next sync.
//   - FirstReference shares one cached copy among the node's pods that
//     read the object, fetched again by the first remount that finds it
//     older than the TTL.
//
// Driver (the agent's remount-on-change, and nodeagent's CSI driver) does
// not wait for a sync: a change the watch delivers wakes the agent's
// reconciler off its grid, at most once per half period, and the remount
// follows; the driver's core does not wait even that. The delay is taken as
// the agent's, uniform over [0, driverMaxWait], plus the watch's own
// delivery, which the model leaves out: for the driver an upper bound (the
// kind test measures it, docs/csi.md).

// remountDelay bounds the time from a sync to its remount.
const minRemountDelay, maxRemountDelay = 0.05, 0.15

// driverMaxWait is the longest a change waits for the reconciler's pass:
// half of its 100 ms period; driverBound adds one whole period for the
// write of a large volume.
const driverMaxWait, driverBound = 0.05, 0.15

// UpdateLatency returns the median and 99th percentile, in seconds, of the
// time an update takes to reach a pod's volume with behaviour b, with pods
// pods of a node sharing the object, and the longest it can take.
func UpdateLatency(b Behaviour, syncFrequency, ttl time.Duration, pods int) (p50, p99, bound float64) {
	samples := updateDelaySamples(b, syncFrequency, ttl, pods)
	return Quantile(samples, 0.5), Quantile(samples, 0.99), UpdateBound(b, syncFrequency, ttl)
}

// UpdateBound is the longest an update can take to reach a pod's volume
// with behaviour b, in seconds: the longest sync interval and remount,
// and the TTL where a cached copy may be that old (FirstReference).
func UpdateBound(b Behaviour, syncFrequency, ttl time.Duration) float64 {
	if b == Driver {
		return driverBound
	}
	bound := 1.5*syncFrequency.Seconds() + 1 + maxRemountDelay
	if b == FirstReference && ttl > 0 {
		bound += ttl.Seconds()
	}
	return bound
}

// updateDelaySamples are 20,000 simulated update delays, sorted, in
// seconds; remembered by their parameters, which a cluster's nodes share.
func updateDelaySamples(b Behaviour, syncFrequency, ttl time.Duration, pods int) []float64 {
	if b == Driver {
		return driverDelays
	}
	cached := b == FirstReference && ttl > 0
	if !cached {
		// Every remount reads content fetched at it: neither the TTL nor
		// the other pods matter.
		ttl, pods = 0, 1
	}
	key := delayKey{cached: cached, s: syncFrequency, t: ttl, k: max(pods, 1)}
	delays.Lock()
	samples, ok := delays.samples[key]
	delays.Unlock()
	if ok {
		return samples
	}
	samples = simulateUpdateDelays(cached, syncFrequency, ttl, key.k)
	delays.Lock()
	delays.samples[key] = samples
	delays.Unlock()
	return samples
}

// driverDelays are Driver's delays: uniform over [0, driverMaxWait], at
// 20,000 evenly spaced points, sorted.
var driverDelays = func() []float64 {
	const n = 20000
	out := make([]float64, n)
	for i := range out {
		out[i] = driverMaxWait * (float64(i) + 0.5) / n
	}
	return out
}()

type delayKey struct {
	cached bool
	s, t   time.Duration
	k      int
}

var delays = struct {
	sync.Mutex
	samples map[delayKey][]float64
}{samples: map[delayKey][]float64{}}

func simulateUpdateDelays(cached bool, syncFrequency, ttl time.Duration, pods int) []float64 {
	s, t := syncFrequency.Seconds(), ttl.Seconds()
	rng := rand.New(rand.NewPCG(120255, uint64(pods)))
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
	return samples
}

// Quantile is the q-quantile of sorted, by the nearest rank; 0 for none.
func Quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}
