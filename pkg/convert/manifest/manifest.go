// Package manifest converts the pod templates of users' manifests with
// package convert's decisions.
//
// Contract:
//
//   - Input: YAML documents (one or many, Lists included, Helm's rendered
//     output as it is). The pod templates of Pod, Deployment, StatefulSet,
//     DaemonSet, ReplicaSet, ReplicationController, Job and CronJob are
//     read; every other object passes through unchanged.
//   - Everything but the converted volumes stays as it was, comments and
//     key order included: the documents are edited as YAML trees
//     (kustomize's kyaml), never decoded and printed again.
//   - What happened to each volume of each pod template is returned, for
//     Summary to write.
package manifest

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/nodeagent-io/nodeagent/pkg/convert"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// Options choose what Convert converts; empty lists choose everything.
type Options struct {
	// Volumes are the names of the volumes to convert.
	Volumes []string
	// Workloads name the objects whose pod templates are converted: a
	// name, or Kind/name (the kind in any case).
	Workloads []string
	// Revert moves the chosen volumes of the driver back to configMap
	// volumes (convert.PlanRevert) instead.
	Revert bool
	// Secrets moves secret volumes, and projected volumes of configMap and
	// secret sources, too (convert.Options.Secrets).
	Secrets bool
	// Grants writes, after each workload with converted volumes, the Role
	// and RoleBinding its pods' service account needs where the driver
	// reads as the pods (Grant), or replaces the ones an earlier run wrote.
	Grants bool
	// Namespace is the grants' namespace for workloads that name none;
	// empty: default, as kubectl has it.
	Namespace string
}

// ObjectResult is what Convert did to one object's pod template.
type ObjectResult struct {
	// Object is Kind/name, or Kind/namespace/name.
	Object  string
	Volumes []convert.VolumeResult
	// Grant is the Role and RoleBinding written for it (Options.Grants),
	// or nil.
	Grant *Grant
}

// Converted counts the object's converted, or reverted, volumes.
func (o ObjectResult) Converted() int {
	n := 0
	for _, v := range o.Volumes {
		if v.Converted || v.Reverted {
			n++
		}
	}
	return n
}

// Convert reads YAML documents from in and writes them to out with the
// configMap volumes of their pod templates converted as opts choose, and
// returns what it did to every pod template with volumes.
func Convert(in io.Reader, out io.Writer, opts Options) ([]ObjectResult, error) {
	reader := &kio.ByteReader{Reader: in, DisableUnwrapping: true, PreserveSeqIndent: true}
	nodes, err := reader.Read()
	if err != nil {
		return nil, fmt.Errorf("reading the manifests: %w", err)
	}
	var results []ObjectResult
	grants := make([][]*Grant, len(nodes))
	for i, node := range nodes {
		before := len(results)
		if results, err = convertObject(node, opts, results); err != nil {
			return nil, err
		}
		for _, r := range results[before:] {
			if r.Grant != nil {
				grants[i] = append(grants[i], r.Grant)
			}
		}
	}
	if nodes, err = withGrants(nodes, grants); err != nil {
		return nil, err
	}
	if err := (kio.ByteWriter{Writer: out}).Write(nodes); err != nil {
		return nil, fmt.Errorf("writing the manifests: %w", err)
	}
	return results, nil
}

// convertObject converts node's pod template, or the items of a List, and
// appends what it did to results.
func convertObject(node *yaml.RNode, opts Options, results []ObjectResult) ([]ObjectResult, error) {
	kind := node.GetKind()
	if strings.HasSuffix(kind, "List") {
		items, err := node.Pipe(yaml.Lookup("items"))
		if err != nil || items == nil {
			return results, err
		}
		elements, err := items.Elements()
		if err != nil {
			return nil, err
		}
		for _, item := range elements {
			if results, err = convertObject(item, opts, results); err != nil {
				return nil, err
			}
		}
		return results, nil
	}
	path, ok := podSpecPaths[kind]
	if !ok {
		return results, nil
	}
	specNode, err := node.Pipe(yaml.Lookup(path...))
	if err != nil || specNode == nil {
		return results, err
	}
	name := objectName(node)
	chosen := opts.chooses(kind, node.GetName())
	choice := convert.Options{Want: func(volume string) bool { return chosen && opts.choosesVolume(volume) }, Secrets: opts.Secrets}
	edit := convertPodSpecNode
	if opts.Revert {
		edit = revertPodSpecNode
	}
	volumes, err := edit(specNode, choice)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(volumes) == 0 {
		return results, nil
	}
	result := ObjectResult{Object: name, Volumes: volumes}
	if opts.Grants && !opts.Revert && result.Converted() > 0 {
		if result.Grant, err = grantOf(specNode, kind, workloadName(node), node.GetNamespace(), opts.Namespace); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return append(results, result), nil
}

// objectName is Kind/name or Kind/namespace/name.
func objectName(node *yaml.RNode) string {
	if ns := node.GetNamespace(); ns != "" {
		return node.GetKind() + "/" + ns + "/" + node.GetName()
	}
	return node.GetKind() + "/" + node.GetName()
}

// chooses says whether opts convert the pod template of kind/name.
func (o Options) chooses(kind, name string) bool {
	if len(o.Workloads) == 0 {
		return true
	}
	for _, w := range o.Workloads {
		k, n, qualified := strings.Cut(w, "/")
		if !qualified && w == name || qualified && strings.EqualFold(k, kind) && n == name {
			return true
		}
	}
	return false
}

// choosesVolume says whether opts convert volumes named volume.
func (o Options) choosesVolume(volume string) bool {
	if len(o.Volumes) == 0 {
		return true
	}
	for _, v := range o.Volumes {
		if v == volume {
			return true
		}
	}
	return false
}

// Summary writes results as the lines a user reads on standard error: a
// line per volume, then the totals.
func Summary(w io.Writer, results []ObjectResult) {
	converted, reverted, left, objects := 0, 0, 0, 0
	for _, o := range results {
		if o.Converted() > 0 {
			objects++
		}
		for _, v := range o.Volumes {
			fmt.Fprintf(w, "%s: %s\n", o.Object, v.Describe())
			switch {
			case v.Converted:
				converted++
			case v.Reverted:
				reverted++
			default:
				left++
			}
		}
		if o.Grant != nil {
			fmt.Fprintf(w, "%s: %s\n", o.Object, o.Grant.Describe())
		}
	}
	verb, n := "converted", converted
	if reverted > 0 {
		verb, n = "reverted", reverted
	}
	fmt.Fprintf(w, "%s %s in %s; left %d as they were\n", verb, count(n, "volume"), count(objects, "object"), left)
}

// count is n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// podSpecPaths are where each kind keeps its pod template's spec.
var podSpecPaths = map[string][]string{
	"Pod":                   {"spec"},
	"Deployment":            {"spec", "template", "spec"},
	"StatefulSet":           {"spec", "template", "spec"},
	"DaemonSet":             {"spec", "template", "spec"},
	"ReplicaSet":            {"spec", "template", "spec"},
	"ReplicationController": {"spec", "template", "spec"},
	"Job":                   {"spec", "template", "spec"},
	"CronJob":               {"spec", "jobTemplate", "spec", "template", "spec"},
}

// convertPodSpecNode converts the volumes of the pod spec at node that opts
// choose, editing the YAML tree in place, and returns what it did.
func convertPodSpecNode(node *yaml.RNode, opts convert.Options) ([]convert.VolumeResult, error) {
	spec, elements, err := podSpecVolumes(node)
	if err != nil || elements == nil {
		return nil, err
	}
	results := make([]convert.VolumeResult, 0, len(elements))
	for i, d := range convert.PlanWith(spec, opts) {
		if err := keepUnknown(&d, elements[i]); err != nil {
			return nil, err
		}
		if d.Converted {
			source, err := csiVolumeSource(d.Attributes)
			if err != nil {
				return nil, err
			}
			replaceField(elements[i], d.From, "csi", source)
		}
		results = append(results, d.VolumeResult)
	}
	return results, nil
}

// keepUnknown leaves the volume at node as it is when it carries fields
// k8s.io/api does not know (convert.KeepUnknown).
func keepUnknown(d *convert.Decision, node *yaml.RNode) error {
	if !d.Converted {
		return nil
	}
	raw, err := node.MarshalJSON()
	if err != nil {
		return fmt.Errorf("volume %s: %w", d.Volume, err)
	}
	return convert.KeepUnknown(d, raw)
}

// revertPodSpecNode moves the driver's volumes of the pod spec at node that
// choice wants back to configMap volumes, editing the YAML tree in place,
// and returns what it did.
func revertPodSpecNode(node *yaml.RNode, choice convert.Options) ([]convert.VolumeResult, error) {
	want := choice.Want
	spec, elements, err := podSpecVolumes(node)
	if err != nil || elements == nil {
		return nil, err
	}
	results := make([]convert.VolumeResult, 0, len(elements))
	for i, r := range convert.PlanRevert(spec, want) {
		if r.Reverted {
			source, err := configMapSource(r.ConfigMap)
			if err != nil {
				return nil, err
			}
			replaceField(elements[i], "csi", "configMap", source)
		}
		results = append(results, r.VolumeResult)
	}
	return results, nil
}

// configMapSource is the YAML of a configMap volume source, its fields in
// the order people write them.
func configMapSource(source *corev1.ConfigMapVolumeSource) (*yaml.RNode, error) {
	node := yaml.NewMapRNode(nil)
	set := func(key string, value *yaml.RNode) error { return node.PipeE(yaml.SetField(key, value)) }
	if err := set("name", yaml.NewStringRNode(source.Name)); err != nil {
		return nil, err
	}
	if source.Optional != nil {
		if err := set("optional", scalar(yaml.NodeTagBool, strconv.FormatBool(*source.Optional))); err != nil {
			return nil, err
		}
	}
	if source.DefaultMode != nil {
		if err := set("defaultMode", scalar(yaml.NodeTagInt, fmt.Sprintf("0%o", *source.DefaultMode))); err != nil {
			return nil, err
		}
	}
	if source.DefaultUser != nil {
		if err := set("defaultUser", scalar(yaml.NodeTagInt, strconv.FormatInt(*source.DefaultUser, 10))); err != nil {
			return nil, err
		}
	}
	if len(source.Items) > 0 {
		items, err := json.Marshal(source.Items)
		if err != nil {
			return nil, err
		}
		value, err := yaml.Parse(string(items))
		if err != nil {
			return nil, err
		}
		blockStyle(value.YNode())
		if err := set("items", value); err != nil {
			return nil, err
		}
	}
	return node, nil
}

// scalar is a plain scalar of tag.
func scalar(tag, value string) *yaml.RNode {
	return yaml.NewRNode(&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value})
}

// blockStyle writes n and what it holds in block style, its strings plain
// where they can be: JSON parsed as YAML, written as people write YAML.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}

// podSpecVolumes decodes the pod spec at node and returns it with the YAML
// elements of its volumes, one per decoded volume (none: nil).
func podSpecVolumes(node *yaml.RNode) (*corev1.PodSpec, []*yaml.RNode, error) {
	var spec corev1.PodSpec
	if err := decode(node, &spec); err != nil {
		return nil, nil, err
	}
	volumes, err := node.Pipe(yaml.Lookup("volumes"))
	if err != nil || volumes == nil {
		return nil, nil, err
	}
	elements, err := volumes.Elements()
	if err != nil {
		return nil, nil, fmt.Errorf("volumes: %w", err)
	}
	if len(elements) != len(spec.Volumes) {
		return nil, nil, fmt.Errorf("volumes: %d in the YAML, %d decoded", len(elements), len(spec.Volumes))
	}
	return &spec, elements, nil
}

// replaceField gives the field key of the mapping m the name newKey and
// the value value, in its place: the fields around it keep their order,
// and the key its comments.
func replaceField(m *yaml.RNode, key, newKey string, value *yaml.RNode) {
	content := m.YNode().Content
	for i := 0; i+1 < len(content); i += 2 {
		if content[i].Value == key {
			content[i].Value = newKey
			content[i+1] = value.YNode()
			return
		}
	}
}

// decode reads node into out through its JSON form.
func decode(node *yaml.RNode, out any) error {
	data, err := node.MarshalJSON()
	if err != nil {
		return err
	}
	return json.Unmarshal(data, out)
}

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
	written := 0
	for _, key := range convert.AttributeOrder {
		if v, ok := attrs[key]; ok {
			written++
			value := yaml.NewStringRNode(v)
			if key == podrefs.AttrItems || key == podrefs.AttrSources {
				value.YNode().Style = yaml.SingleQuotedStyle // JSON, readable without escapes
			}
			if err := values.PipeE(yaml.SetField(key, value)); err != nil {
				return nil, err
			}
		}
	}
	if written != len(attrs) {
		return nil, fmt.Errorf("attributes %v: some are not in convert.AttributeOrder, and would be lost", attrs)
	}
	return node, node.PipeE(yaml.SetField("volumeAttributes", values))
}
