package volumemanager

import (
	"path/filepath"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// requestFor is the pods source's word to the core on what pod's volume
// spec is made from: the pod's namespace and fsGroup, the mount points its
// containers put inside the volume, its fields for downwardAPI sources,
// and the pod itself for the volume's events.
func (m *Manager) requestFor(pod *corev1.Pod, spec podrefs.KeptVolume) *cache.Request {
	req := &cache.Request{
		Namespace:   pod.Namespace,
		MountPoints: nestedMountPoints(pod, spec.Name),
		Subject:     pod,
	}
	if sc := pod.Spec.SecurityContext; sc != nil {
		req.FSGroup = sc.FSGroup
	}
	if spec.Projected != nil {
		req.Fields = podFields{pod: pod, allocatable: m.opts.NodeAllocatable}
	}
	return req
}

// podFields is the pods source's cache.FieldResolver: the pod's fields and
// its containers' resources, and the node's allocatable resources for
// limits a container does not set (nil fails such items).
type podFields struct {
	pod         *corev1.Pod
	allocatable func() (corev1.ResourceList, error)
}

func (f podFields) DownwardAPIFiles(items []corev1.DownwardAPIVolumeFile, mode int32) (map[string]atomicwriter.FileProjection, error) {
	return downwardAPIPayload(items, f.pod, f.allocatable, mode)
}

// nestedMountPoints returns, relative to the volume, the paths at which a
// container of pod mounts another volume beneath a mount path of volume
// (only the outermost of a chain of nested mounts). A relative mount path
// is taken from the container's root, as the runtime takes it. Paths that
// leave the volume or take a name its writer reserves are returned as they
// are: the core refuses them, and says so on the volume.
func nestedMountPoints(pod *corev1.Pod, volume string) []string {
	if !hasNestedMount(pod, volume) {
		return nil // most pods: every sync asks, and nothing is allocated
	}
	var out []string
	podrefs.VisitContainers(pod, func(c *corev1.Container) {
		var mine, all []string
		for _, mount := range c.VolumeMounts {
			p := filepath.Join("/", mount.MountPath)
			all = append(all, p)
			if mount.Name == volume {
				mine = append(mine, p)
			}
		}
		for _, base := range mine {
			out = append(out, outermostBeneath(base, all)...)
		}
	})
	return out
}

// hasNestedMount says whether a container of pod mounts a volume beneath a
// mount path of volume, without allocating.
func hasNestedMount(pod *corev1.Pod, volume string) bool {
	found := false
	podrefs.VisitContainers(pod, func(c *corev1.Container) {
		for _, mine := range c.VolumeMounts {
			if mine.Name != volume {
				continue
			}
			base := strings.TrimSuffix(filepath.Clean(mine.MountPath), "/")
			for _, other := range c.VolumeMounts {
				p := filepath.Clean(other.MountPath)
				nested := p != filepath.Clean(mine.MountPath) && strings.HasPrefix(p, base+"/")
				// A relative path is the runtime's to place: the full
				// computation decides.
				found = found || nested || !filepath.IsAbs(mine.MountPath) || !filepath.IsAbs(other.MountPath)
			}
		}
	})
	return found
}

// outermostBeneath returns the paths of all that lie beneath base, relative
// to it, leaving out those beneath another such path.
func outermostBeneath(base string, all []string) []string {
	prefix := base + "/"
	if base == "/" {
		prefix = "/"
	}
	var beneath []string
	for _, p := range all {
		if p != base && strings.HasPrefix(p, prefix) {
			beneath = append(beneath, p)
		}
	}
	var out []string
	for _, p := range beneath {
		outermost := true
		for _, q := range beneath {
			if q != p && strings.HasPrefix(p, q+"/") {
				outermost = false
			}
		}
		if outermost {
			out = append(out, strings.TrimPrefix(p, prefix))
		}
	}
	return out
}
