// Package populator fills the desired state with the volumes of the pods
// the pod workers sync, as the kubelet's desired-state populator does
// (docs/kubelet-behaviour.md, "Volume manager"):
//
//   - the pod source tells it, change by change, which pods are active
//     (their volumes must stay: PodActive, PodInactive) and when it has
//     listed every pod (PodsSynced); until then no pod is dropped;
//   - every sync marks its pod (MarkPod, the kubelet's ReprocessPod); the
//     next pass re-reads the pod's volumes into the desired state and flags
//     those on disk for a remount;
//   - a pass drops the pods that left the active set since the last one,
//     and a marked pod that is not active (its sync raced with its
//     deletion); once, when the source has synced, it drops every desired
//     pod that is not active;
//   - volumes found on disk at start are kept as they are (Keep) until
//     their pod's first sync adopts them or the synced source shows the pod
//     gone.
//
// A pass looks only at what changed since the last: the pods marked and
// the pods gone. It hands every volume whose desire may have changed to
// the reconciler, and runs on a 100 ms grid only at the points where a
// pass is due (pacedloop).
package populator

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/pacedloop"
)

// desiredPods is what the populator changes of the desired state.
type desiredPods interface {
	SetPodVolumes(pod types.UID, volumes []cache.DesiredVolume, touched []cache.VolumeKey) []cache.VolumeKey
	DeletePod(pod types.UID) []cache.VolumeKey
	PodUIDs() sets.Set[types.UID]
}

// remountFlagger flags volumes on disk for a remount (the actual state).
type remountFlagger interface {
	MarkRemountRequired(keys ...cache.VolumeKey)
}

// Options configure New.
type Options struct {
	// RootDir holds the volumes, in the kubelet's layout (podrefs.VolumeDir).
	RootDir string
	Desired desiredPods
	Actual  remountFlagger
	// HandOver gives the reconciler volumes to look at.
	HandOver func(keys ...cache.VolumeKey)
	// Request says what a pod's volume is made from, for the core that
	// knows no pods (the pods source's requestFor).
	Request func(pod *corev1.Pod, spec podrefs.KeptVolume) *cache.Request
	// Clock drives the loop; nil means the real clock. Period is the
	// loop's (default 100 ms), Origin where its grid starts.
	Clock  clock.WithTicker
	Period time.Duration
	Origin time.Time
}

// Populator is the volume manager's desired-state populator for pods.
type Populator struct {
	opts    Options
	loop    *pacedloop.Loop
	podsDir podrefs.PodsDir

	// mu guards everything below. Held, it is taken before the
	// reconciler's and the states' locks, never after.
	mu sync.Mutex
	// marked are the pods marked since the last pass, newest version.
	marked map[types.UID]markedPod
	// gone are the pods that left the active set since the last pass.
	gone sets.Set[types.UID]
	// active are the pods whose volumes must stay; synced says the pod
	// source has listed every pod, compared says the pass that follows
	// has compared it with the desired pods.
	active           sets.Set[types.UID]
	synced, compared bool
	// claimed are the inactive pods whose directories are being removed
	// (ClaimInactive): a pass sets up none of their volumes meanwhile.
	claimed sets.Set[types.UID]
	// A pass's scratch space, kept so that a pass allocates little:
	// the volumes of the pod it processes, the volumes it flags for a
	// remount, and those it hands over.
	volumes         []cache.DesiredVolume
	flag, handOvers []cache.VolumeKey
}

// New returns a populator; call Run to start its loop.
func New(opts Options) *Populator {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Period <= 0 {
		opts.Period = 100 * time.Millisecond
	}
	return &Populator{
		opts:    opts,
		loop:    pacedloop.New(opts.Clock, opts.Origin, opts.Period),
		podsDir: podrefs.PodsDirOf(opts.RootDir),
		marked:  map[types.UID]markedPod{},
		gone:    sets.New[types.UID](),
		active:  sets.New[types.UID](),
		claimed: sets.New[types.UID](),
	}
}

// Run passes on the grid where one is due, until ctx ends.
func (p *Populator) Run(ctx context.Context) {
	p.loop.Run(ctx, func(context.Context) time.Time {
		p.Pass()
		return time.Time{} // never due without a kick
	})
}

// PodActive says pod's volumes must stay. The pod source calls it for a
// pod before the pod's first sync can mark it, so that the pass that
// processes the mark finds the pod active.
func (p *Populator) PodActive(pod types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.active.Insert(pod)
	p.gone.Delete(pod)
}

// PodInactive says pod's volumes must go: it is being deleted, has
// finished, or has left the source. The next pass drops it.
func (p *Populator) PodInactive(pod types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.active.Has(pod) {
		p.active.Delete(pod)
		p.gone.Insert(pod)
		p.loop.Kick()
	}
}

// PodsSynced says the pod source has listed every pod: from the next pass
// on, pods that are not active are dropped.
func (p *Populator) PodsSynced() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.synced {
		p.synced = true
		p.loop.Kick()
	}
}

// ClaimInactive returns those of pods that are not active and not in the
// set inUse returns, and claims them until Release: no pass sets up a
// volume of theirs meanwhile (a pod that becomes active waits, marked, for
// the first pass after Release), so that their directories can be removed
// without the populator's lock held across the disk work. Before the
// source has synced it claims nothing: a pod not listed yet may be active.
// inUse is called with the populator's lock held, and must not call it.
func (p *Populator) ClaimInactive(pods []types.UID, inUse func() sets.Set[types.UID]) []types.UID {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.synced {
		return nil
	}
	used := inUse()
	var claimed []types.UID
	for _, uid := range pods {
		if p.active.Has(uid) || used.Has(uid) || p.claimed.Has(uid) {
			continue
		}
		p.claimed.Insert(uid)
		claimed = append(claimed, uid)
	}
	return claimed
}

// Release ends the claim on pods, and kicks a pass if one of them became
// active meanwhile.
func (p *Populator) Release(pods []types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	waiting := false
	for _, uid := range pods {
		p.claimed.Delete(uid)
		_, marked := p.marked[uid]
		waiting = waiting || marked
	}
	if waiting {
		p.loop.Kick()
	}
}

// markedPod is a pod marked for the next pass, with its volumes.
type markedPod struct {
	pod     *corev1.Pod
	volumes map[string]podrefs.KeptVolume
}

// MarkPod takes the newest version of pod and marks it for the next pass
// (the kubelet's ReprocessPod).
func (p *Populator) MarkPod(pod *corev1.Pod) {
	p.MarkPodVolumes(pod, podrefs.KeptVolumes(pod))
}

// MarkPodVolumes is MarkPod for a caller that has worked out the pod's
// volumes (podrefs.KeptVolumes) already: a sync does it once.
func (p *Populator) MarkPodVolumes(pod *corev1.Pod, volumes map[string]podrefs.KeptVolume) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marked[pod.UID] = markedPod{pod: pod, volumes: volumes}
	p.loop.Kick()
}

// DropPod forgets pod's volumes now, for its teardown, and hands them to
// the reconciler, which unmounts them.
func (p *Populator) DropPod(pod types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.marked, pod)
	p.opts.HandOver(p.opts.Desired.DeletePod(pod)...)
}

// Keep adds volumes found on disk at start to the desired state as kept:
// neither set up nor removed until their pod's first sync or the synced
// source's word that the pod is gone.
func (p *Populator) Keep(found []cache.MountedVolume) {
	byPod := map[types.UID][]cache.DesiredVolume{}
	for _, v := range found {
		byPod[v.Key.PodUID] = append(byPod[v.Key.PodUID], cache.DesiredVolume{Key: v.Key, Spec: v.Spec, Dir: v.Dir})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for uid, volumes := range byPod {
		p.opts.HandOver(p.opts.Desired.SetPodVolumes(uid, volumes, nil)...)
	}
}

// Backlog is the number of pods the next pass looks at.
func (p *Populator) Backlog() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.marked) + len(p.gone)
}

// Pass is one pass of the populator. Run calls it on the grid; tests call
// it directly.
func (p *Populator) Pass() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.synced && !p.compared {
		for uid := range p.opts.Desired.PodUIDs() {
			if !p.active.Has(uid) {
				p.drop(uid)
			}
		}
		p.compared = true
	}
	if p.synced {
		for uid := range p.gone {
			p.drop(uid)
		}
	}
	clear(p.gone)
	for uid, m := range p.marked {
		if p.claimed.Has(uid) {
			continue // its directory is being removed: stays marked until Release
		}
		delete(p.marked, uid)
		if p.synced && !p.active.Has(uid) {
			p.drop(uid) // marked by a sync that raced with the pod's deletion
			continue
		}
		p.process(m.pod, m.volumes)
	}
	// The desired state first, then the flags, then the hand-over: the
	// reconciler finds every flagged volume desired as the pod is now.
	if len(p.flag) > 0 {
		p.opts.Actual.MarkRemountRequired(p.flag...)
		p.flag = p.flag[:0]
	}
	if len(p.handOvers) > 0 {
		p.opts.HandOver(p.handOvers...)
		p.handOvers = p.handOvers[:0]
	}
}

// process re-reads one marked pod's volumes into the desired state, and
// notes them to be flagged for a remount (which also adopts volumes found
// on disk) and every volume it had or has to be handed to the reconciler,
// at the end of the pass. Called with p.mu held.
func (p *Populator) process(pod *corev1.Pod, volumes map[string]podrefs.KeptVolume) {
	p.volumes = p.volumes[:0]
	for name, spec := range volumes {
		key := cache.VolumeKey{PodUID: pod.UID, Volume: name}
		dir := p.podsDir.VolumeDir(string(pod.UID), spec.Plugin, name)
		p.volumes = append(p.volumes, cache.DesiredVolume{Key: key, Request: p.opts.Request(pod, spec), Spec: spec, Dir: dir})
		p.flag = append(p.flag, key)
	}
	p.handOvers = p.opts.Desired.SetPodVolumes(pod.UID, p.volumes, p.handOvers)
}

// drop removes a pod's volumes from the desired state and hands them to
// the reconciler. Called with p.mu held.
func (p *Populator) drop(uid types.UID) {
	delete(p.marked, uid)
	p.opts.HandOver(p.opts.Desired.DeletePod(uid)...)
}
