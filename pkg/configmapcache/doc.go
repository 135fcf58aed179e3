// Package configmapcache is the node agent's source of ConfigMaps: the
// kubelet's ConfigMap manager, with its three change-detection strategies and
// a switch between the cache invalidation before and after
// kubernetes/kubernetes#120255 (docs/kubelet-behaviour.md, "The ConfigMap
// manager").
//
// The volume manager calls GetConfigMap(ctx, namespace, name) on every mount
// and remount, once per ConfigMap a volume reads, with the operation's
// context; the agent reads the ConfigMaps of containers' environments once,
// at a pod's first sync, with the sync's. A GET (bounded by 30 s besides)
// and a wait for a watch's first list end when that context does, so a
// shutdown never waits for a hung apiserver. The pod workers
// call RegisterPod on every sync and UnregisterPod when a pod is torn down.
// RegisterPod registers every name the pod references (podrefs.ConfigMapNames):
// ConfigMap volumes, projected volumes' configMap sources, env and envFrom.
// A name must be registered by some pod before it can be read.
//
// When a GET is sent, and with which resourceVersion:
//
//   - Strategy Get: every GetConfigMap sends a GET without resourceVersion,
//     a quorum read that the apiserver forwards to etcd. Nothing is cached.
//   - Strategy Cache: entries are keyed by namespace/name and shared by every
//     pod that references the name. GetConfigMap sends no GET while the
//     entry is fresh: it holds an object and now < lastFetch + TTL, the TTL
//     being read on every check (a negative TTL makes nothing fresh). Otherwise it sends one GET, with
//     resourceVersion "0" (served from the apiserver's watch cache) when
//     a good object is cached, and without resourceVersion when none is: the
//     first read, the read after an invalidation, after a NotFound.
//   - Strategy Watch: one reflector per referenced name (a LIST and a WATCH
//     with field selector metadata.name=<name>, watches of at least 30
//     minutes), started on the first reference and stopped when the last pod
//     drops it, or once the ConfigMap is seen to be immutable. A watch whose
//     ConfigMap has not been read for 5·S (at least a minute; checked every
//     minute) stops too, and the next read restarts it: in practice the
//     watches of ConfigMaps that only environments use. GetConfigMap never
//     sends a GET.
//
// What invalidates a cache entry (strategy cache):
//
//   - Invalidation every-sync (the kubelet up to v1.28): every RegisterPod
//     re-adds each name the pod references, and adding a reference drops the
//     cached object. The remount that follows each pod sync therefore sends
//     a quorum GET: one etcd read per pod sync per ConfigMap.
//   - Invalidation first-reference (the kubelet from v1.29): only a pod's
//     first RegisterPod, and names that a later version of the pod adds,
//     add references; names it drops lose theirs. Steady state sends only
//     TTL-driven GETs at resourceVersion "0".
//
// Errors: a failed GET other than NotFound keeps the cached object (it is
// returned, stale, and the entry's timestamp does not move, so the next read
// retries). A NotFound replaces the object and is cached as an error; an
// error is never fresh. A fetched object whose resourceVersion is older than
// the cached one is ignored: the cache never goes backwards.
//
// The CSI driver's sources (watches.go): Watches and SecretWatches keep one
// watch per ConfigMap or Secret that its volumes name, opened with the first
// volume and closed with the last, kept open for immutable objects, never
// stopped for idleness, with a client asked anew at each list and watch (a
// pod's token); reads never send a GET.
//
// Locking: one mutex guards the map of entries and one guards each entry,
// so a slow GET of one ConfigMap never blocks reads of another, and
// concurrent reads of one stale entry send exactly one GET (the others wait
// for it, at most its 30 s bound).
package configmapcache
