package convert

import (
	"fmt"
	"io"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// Options choose what Convert converts; empty lists choose everything.
type Options struct {
	// Volumes are the names of the volumes to convert.
	Volumes []string
	// Workloads name the objects whose pod templates are converted: a
	// name, or Kind/name (the kind in any case).
	Workloads []string
}

// VolumeResult is what Convert did to one volume of a pod template.
type VolumeResult struct {
	Volume    string
	Converted bool
	// InPlace: converted with updates: inPlace, for SubPathUsers.
	InPlace      bool
	SubPathUsers []string
	// Reason says why a volume was left as it was.
	Reason string
}

// ObjectResult is what Convert did to one object's pod template.
type ObjectResult struct {
	// Object is Kind/name, or Kind/namespace/name.
	Object  string
	Volumes []VolumeResult
}

// Converted counts the object's converted volumes.
func (o ObjectResult) Converted() int {
	n := 0
	for _, v := range o.Volumes {
		if v.Converted {
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
	for _, node := range nodes {
		if results, err = convertObject(node, opts, results); err != nil {
			return nil, err
		}
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
	volumes, err := convertPodSpecNode(specNode, func(volume string) bool { return chosen && opts.choosesVolume(volume) })
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(volumes) > 0 {
		results = append(results, ObjectResult{Object: name, Volumes: volumes})
	}
	return results, nil
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
	converted, left, objects := 0, 0, 0
	for _, o := range results {
		if o.Converted() > 0 {
			objects++
		}
		for _, v := range o.Volumes {
			fmt.Fprintf(w, "%s: %s\n", o.Object, v.describe())
			if v.Converted {
				converted++
			} else {
				left++
			}
		}
	}
	fmt.Fprintf(w, "converted %s in %s; left %d as they were\n", count(converted, "volume"), count(objects, "object"), left)
}

// count is n and noun, plural unless n is 1.
func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
