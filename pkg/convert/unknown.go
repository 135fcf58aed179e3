package convert

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	sigsjson "sigs.k8s.io/json"

	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
)

// UnknownFields lists the fields of a volume, given as the JSON the
// apiserver sent, that k8s.io/api's Volume does not know: fields of an
// apiserver newer than this build (a new feature gate's, say). Each is a
// path from the volume, such as "configMap.defaultUser", sorted.
func UnknownFields(rawVolume []byte) ([]string, error) {
	var volume corev1.Volume
	strict, err := sigsjson.UnmarshalStrict(rawVolume, &volume, sigsjson.DisallowUnknownFields)
	if err != nil {
		return nil, fmt.Errorf("decoding a volume: %w", err)
	}
	var fields []string
	for _, e := range strict {
		var field sigsjson.FieldError
		if errors.As(e, &field) {
			fields = append(fields, field.FieldPath())
		}
	}
	slices.Sort(fields)
	return slices.Compact(fields), nil
}

// KeepUnknown leaves as it is a volume that d would convert when rawVolume,
// its JSON, carries fields UnknownFields finds: the conversion writes the
// driver's volume from the fields it knows, so it would drop the others.
// The reason names them.
func KeepUnknown(d *Decision, rawVolume []byte) error {
	if !d.Converted {
		return nil
	}
	fields, err := UnknownFields(rawVolume)
	if err != nil || len(fields) == 0 {
		return err
	}
	d.Converted, d.InPlace, d.Attributes = false, false, nil
	d.Reason = fmt.Sprintf("it sets %s, which this version of nodeagent does not know: converting it would drop %s",
		strings.Join(fields, ", "), map[bool]string{true: "it", false: "them"}[len(fields) == 1])
	return nil
}

// DriverVolume is the driver's volume that d converts a volume named name
// into.
func (d Decision) DriverVolume(name string) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{
		Driver: podrefs.DriverName, ReadOnly: ptrTo(true), VolumeAttributes: d.Attributes}}}
}
