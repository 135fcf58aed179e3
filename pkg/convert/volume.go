package convert

import (
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// attributeOrder is the order the csi volume's attributes are written in:
// the order of the ConfigMapVolumeSource's fields, then updates.
var attributeOrder = []string{podrefs.AttrConfigMap, podrefs.AttrOptional, podrefs.AttrDefaultMode, podrefs.AttrItems, podrefs.AttrUpdates}

// driverAttributes returns the driver's attributes for source, or why the
// driver cannot serve it as the configMap volume would be served.
func driverAttributes(source *corev1.ConfigMapVolumeSource, inPlace bool) (map[string]string, error) {
	attrs := map[string]string{podrefs.AttrConfigMap: source.Name}
	if source.Optional != nil {
		attrs[podrefs.AttrOptional] = strconv.FormatBool(*source.Optional)
	}
	if source.DefaultMode != nil {
		attrs[podrefs.AttrDefaultMode] = fmt.Sprintf("%04o", *source.DefaultMode)
	}
	if len(source.Items) > 0 {
		items, err := json.Marshal(source.Items)
		if err != nil {
			return nil, err
		}
		attrs[podrefs.AttrItems] = string(items)
	}
	if inPlace {
		attrs[podrefs.AttrUpdates] = podrefs.UpdatesInPlace
	}
	parsed, problems := podrefs.ParseDriverAttributes(attrs)
	if len(problems) > 0 {
		return nil, fmt.Errorf("the driver would refuse it: %s", problems[0])
	}
	if !sameFiles(source, &parsed.ConfigMap) {
		return nil, fmt.Errorf("the driver's attributes cannot say it exactly")
	}
	return attrs, nil
}

// sameFiles says whether the driver's source asks for the files the volume's
// does, defaults applied to both as the API applies them.
func sameFiles(volume, driver *corev1.ConfigMapVolumeSource) bool {
	v, d := volume.DeepCopy(), driver.DeepCopy()
	for _, s := range []*corev1.ConfigMapVolumeSource{v, d} {
		if s.DefaultMode == nil {
			s.DefaultMode = ptrTo(int32(0o644))
		}
		if s.Optional == nil {
			s.Optional = ptrTo(false)
		}
		if len(s.Items) == 0 {
			s.Items = nil
		}
	}
	return equality.Semantic.DeepEqual(v, d)
}

func ptrTo[T any](v T) *T { return &v }

// csiVolumeSource is the YAML of the driver's volume source with attrs.
func csiVolumeSource(attrs map[string]string) (*yaml.RNode, error) {
	node := yaml.NewMapRNode(nil)
	if err := node.PipeE(yaml.SetField("driver", yaml.NewStringRNode(podrefs.DriverName))); err != nil {
		return nil, err
	}
	if err := node.PipeE(yaml.SetField("readOnly", yaml.NewRNode(&yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagBool, Value: "true"}))); err != nil {
		return nil, err
	}
	values := yaml.NewMapRNode(nil)
	for _, key := range attributeOrder {
		if v, ok := attrs[key]; ok {
			value := yaml.NewStringRNode(v)
			if key == podrefs.AttrItems {
				value.YNode().Style = yaml.SingleQuotedStyle // JSON, readable without escapes
			}
			if err := values.PipeE(yaml.SetField(key, value)); err != nil {
				return nil, err
			}
		}
	}
	return node, node.PipeE(yaml.SetField("volumeAttributes", values))
}
