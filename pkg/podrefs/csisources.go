package podrefs

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
)

// parseSources reads the sources attribute: the JSON of a projected
// volume's sources, of which the driver serves configMap and secret
// sources. The others (downwardAPI, serviceAccountToken,
// clusterTrustBundle, podCertificate) stay with the kubelet: a pod keeps
// them in a projected volume of its own. Every source's name and items are
// checked as the API server checks them, and their paths together, as
// one volume's.
func parseSources(s string) ([]corev1.VolumeProjection, []string) {
	var sources []corev1.VolumeProjection
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sources); err != nil {
		return nil, []string{fmt.Sprintf(`attribute %s is not a JSON list of projected volume sources ({"configMap": {...}} or {"secret": {...}}): %v`, AttrSources, err)}
	}
	if len(sources) == 0 {
		return nil, []string{fmt.Sprintf("attribute %s is empty: want at least one configMap or secret source", AttrSources)}
	}
	var paths, problems []string
	for i, p := range sources {
		where := fmt.Sprintf("attribute %s[%d]", AttrSources, i)
		var name, kind string
		var items []corev1.KeyToPath
		switch {
		case p.ConfigMap != nil && p.Secret == nil && !otherSource(p):
			name, kind, items = p.ConfigMap.Name, "ConfigMap", p.ConfigMap.Items
		case p.Secret != nil && p.ConfigMap == nil && !otherSource(p):
			name, kind, items = p.Secret.Name, "Secret", p.Secret.Items
		default:
			problems = append(problems, where+": want exactly one of configMap and secret; downwardAPI, serviceAccountToken, clusterTrustBundle and podCertificate sources stay with the kubelet, in a projected volume of the pod's own")
			continue
		}
		problems = append(problems, objectNameProblems(fmt.Sprintf("%s[%d].name", AttrSources, i), kind, name)...)
		valid, more := itemProblems(where+".items", items)
		paths, problems = append(paths, valid...), append(problems, more...)
	}
	if len(problems) == 0 {
		if _, err := atomicwriter.ValidatePayloadPaths(paths); err != nil {
			problems = append(problems, fmt.Sprintf("attribute %s: %v", AttrSources, err))
		}
	}
	return sources, problems
}

// otherSource says whether p is a source the driver leaves to the kubelet.
func otherSource(p corev1.VolumeProjection) bool {
	return p.DownwardAPI != nil || p.ServiceAccountToken != nil || p.ClusterTrustBundle != nil || p.PodCertificate != nil
}
