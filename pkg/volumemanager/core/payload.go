package core

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"

	"github.com/cespare/xxhash/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodeagent-io/nodeagent/pkg/model"
	"github.com/nodeagent-io/nodeagent/pkg/podrefs"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/atomicwriter"
	"github.com/nodeagent-io/nodeagent/pkg/volumemanager/cache"
)

// modeOrDefault is mode, or what the API defaults a volume's defaultMode
// to (the same for ConfigMap, Secret and projected volumes), for objects
// that skipped defaulting (fake clients).
func modeOrDefault(mode *int32) int32 {
	if mode != nil {
		return *mode
	}
	return corev1.ConfigMapVolumeSourceDefaultMode
}

func isOptional(optional *bool) bool { return optional != nil && *optional }

// owners resolves a file's owner UID as KEP-5936 says (an item's user, else
// the volume's defaultUser), and nothing while it is off, as a kubelet
// without its gate AtomicWriteVolumeUserFields leaves the files root's
// (docs/kubelet-behaviour.md, "The files' owner").
type owners struct {
	on          bool
	defaultUser *int64
}

func (o owners) of(item *int64) *int64 {
	switch {
	case !o.on:
		return nil
	case item != nil:
		return item
	}
	return o.defaultUser
}

// Payload computes the files of a ConfigMap volume (docs/kubelet-behaviour.md,
// "The volume on disk"); fileOwners honours its defaultUser and items'
// user.
func Payload(source *corev1.ConfigMapVolumeSource, cm *corev1.ConfigMap, fileOwners bool) (map[string]atomicwriter.FileProjection, error) {
	return configMapPayload(source.Items, cm, modeOrDefault(source.DefaultMode), isOptional(source.Optional),
		owners{on: fileOwners, defaultUser: source.DefaultUser})
}

// configMapPayload is the payload of one ConfigMap, for a ConfigMap volume or
// a projected volume's configMap source (keysPayload).
func configMapPayload(items []corev1.KeyToPath, cm *corev1.ConfigMap, mode int32, optional bool, users owners) (map[string]atomicwriter.FileProjection, error) {
	// The apiserver refuses a key in both maps, yet the kubelet's rule for
	// one that got there anyway differs by case, and nodeagent's files are
	// the kubelet's: every key's file holds its binaryData, a listed key's
	// its data.
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for key, value := range cm.BinaryData {
		if _, inData := cm.Data[key]; !inData || len(items) == 0 {
			data[key] = value
		}
	}
	for key, value := range cm.Data {
		if _, inBinary := data[key]; !inBinary {
			data[key] = []byte(value)
		}
	}
	return keysPayload(model.ConfigMap, cm.Name, items, data, mode, optional, users)
}

// secretPayload is the payload of one Secret, for a Secret volume or a
// projected volume's secret source (keysPayload).
func secretPayload(items []corev1.KeyToPath, secret *corev1.Secret, mode int32, optional bool, users owners) (map[string]atomicwriter.FileProjection, error) {
	return keysPayload(model.Secret, secret.Name, items, secret.Data, mode, optional, users)
}

// keysPayload is the payload of one object's keys, as the kubelet writes a
// ConfigMap's or a Secret's. Without items, every key becomes a file named
// after it, with the default mode. With items, only the listed keys, each
// at its path with its own mode or the default; of two items with one path
// the later wins; a listed key missing from the object is an error unless
// the source is optional, in which case it is skipped. Each file's owner is
// as users says.
func keysPayload(kind model.Kind, name string, items []corev1.KeyToPath, data map[string][]byte, mode int32, optional bool, users owners) (map[string]atomicwriter.FileProjection, error) {
	payload := make(map[string]atomicwriter.FileProjection, max(len(items), len(data)))
	if len(items) == 0 {
		user := users.of(nil)
		for key, value := range data {
			payload[key] = atomicwriter.FileProjection{Data: value, Mode: mode, User: user}
		}
		return payload, nil
	}
	for _, item := range items {
		value, ok := data[item.Key]
		switch {
		case !ok && optional:
			continue
		case !ok:
			return nil, failure(CauseKeyMissing, fmt.Errorf("%s %q has no key %q (listed in items for path %q)", strings.ToLower(string(kind)), name, item.Key, item.Path))
		}
		itemMode := mode
		if item.Mode != nil {
			itemMode = *item.Mode
		}
		payload[item.Path] = atomicwriter.FileProjection{Data: value, Mode: itemMode, User: users.of(item.User)}
	}
	return payload, nil
}

// objectSources are where a volume's objects come from: Secrets nil where
// none are served (the agent).
type objectSources struct {
	configMaps ConfigMapGetter
	secrets    SecretGetter
}

// volumePayload computes the files of volume v as req asks for them, and
// the resourceVersions of the objects read. A missing optional object
// contributes no files. For a projected volume every source is tried and
// all errors are returned together, as the kubelet does; sources nodeagent
// does not serve (podrefs.KeptVolume.NotServed) are skipped. fileOwners
// honours the volume's defaultUser and its items' user.
func volumePayload(ctx context.Context, v podrefs.KeptVolume, req *cache.Request, from objectSources, fileOwners bool) (map[string]atomicwriter.FileProjection, string, error) {
	switch {
	case v.ConfigMap != nil:
		cm, err := getConfigMap(ctx, from.configMaps, req.Namespace, v.ConfigMap.Name, isOptional(v.ConfigMap.Optional))
		if err != nil {
			return nil, "", err
		}
		payload, err := Payload(v.ConfigMap, cm, fileOwners)
		return payload, cm.ResourceVersion, err
	case v.Secret != nil && from.secrets == nil:
		return nil, "", failure(CauseInvalidPayload, fmt.Errorf("volume %s reads Secret %s, and nothing here serves Secrets", v.Name, v.Secret.SecretName))
	case v.Secret != nil:
		secret, err := getSecret(ctx, from.secrets, req.Namespace, v.Secret.SecretName, isOptional(v.Secret.Optional))
		if err != nil {
			return nil, "", err
		}
		payload, err := secretPayload(v.Secret.Items, secret, modeOrDefault(v.Secret.DefaultMode), isOptional(v.Secret.Optional),
			owners{on: fileOwners, defaultUser: v.Secret.DefaultUser})
		return payload, secret.ResourceVersion, err
	}
	return projectedPayload(ctx, v, req, from, fileOwners)
}

// projectedPayload is volumePayload's for a projected volume.
func projectedPayload(ctx context.Context, v podrefs.KeptVolume, req *cache.Request, from objectSources, fileOwners bool) (map[string]atomicwriter.FileProjection, string, error) {
	mode := modeOrDefault(v.Projected.DefaultMode)
	users := owners{on: fileOwners, defaultUser: v.Projected.DefaultUser}
	payload := map[string]atomicwriter.FileProjection{}
	var versions []string
	var errs []error
	for _, s := range v.Projected.Sources {
		var part map[string]atomicwriter.FileProjection
		var err error
		switch {
		case s.ConfigMap != nil:
			optional := isOptional(s.ConfigMap.Optional)
			var cm *corev1.ConfigMap
			if cm, err = getConfigMap(ctx, from.configMaps, req.Namespace, s.ConfigMap.Name, optional); err == nil {
				part, err = configMapPayload(s.ConfigMap.Items, cm, mode, optional, users)
				versions = appendVersion(versions, s.ConfigMap.Name, cm.ResourceVersion)
			}
		case s.Secret != nil && from.secrets != nil:
			optional := isOptional(s.Secret.Optional)
			var secret *corev1.Secret
			if secret, err = getSecret(ctx, from.secrets, req.Namespace, s.Secret.Name, optional); err == nil {
				part, err = secretPayload(s.Secret.Items, secret, mode, optional, users)
				versions = appendVersion(versions, "secret/"+s.Secret.Name, secret.ResourceVersion)
			}
		case s.DownwardAPI != nil && req.Fields == nil:
			err = fmt.Errorf("volume %s: its downwardAPI source has no object to read fields from", v.Name)
		case s.DownwardAPI != nil:
			if part, err = req.Fields.DownwardAPIFiles(s.DownwardAPI.Items, mode); err == nil {
				setDownwardAPIOwners(part, s.DownwardAPI.Items, users)
			}
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		maps.Copy(payload, part)
	}
	if len(errs) > 0 {
		return nil, "", errors.Join(errs...)
	}
	return payload, strings.Join(versions, ","), nil
}

// appendVersion adds name=version to a projected volume's versions, if the
// object has one (a missing optional object has none).
func appendVersion(versions []string, name, version string) []string {
	if version == "" {
		return versions
	}
	return append(versions, name+"="+version)
}

// setDownwardAPIOwners gives each file of a downwardAPI source its owner.
func setDownwardAPIOwners(files map[string]atomicwriter.FileProjection, items []corev1.DownwardAPIVolumeFile, users owners) {
	for _, item := range items {
		if f, ok := files[item.Path]; ok {
			f.User = users.of(item.User)
			files[item.Path] = f
		}
	}
}

// getConfigMap reads a ConfigMap for a volume. A missing optional one is an
// empty ConfigMap: its volume is empty, and a remount removes the files of
// a ConfigMap that was deleted.
func getConfigMap(ctx context.Context, get ConfigMapGetter, namespace, name string, optional bool) (*corev1.ConfigMap, error) {
	cm, err := get.GetConfigMap(ctx, namespace, name)
	if err == nil {
		return cm, nil
	}
	if apierrors.IsNotFound(err) && optional {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, nil
	}
	return nil, readFailure(model.ConfigMap, namespace, name, err)
}

// getSecret reads a Secret for a volume, as getConfigMap does a ConfigMap.
func getSecret(ctx context.Context, get SecretGetter, namespace, name string, optional bool) (*corev1.Secret, error) {
	secret, err := get.GetSecret(ctx, namespace, name)
	if err == nil {
		return secret, nil
	}
	if apierrors.IsNotFound(err) && optional {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, nil
	}
	return nil, readFailure(model.Secret, namespace, name, err)
}

// volumeWord is how the kubelet's messages name each kind of object in a
// volume's events, which nodeagent's follow.
var volumeWord = map[model.Kind]string{model.ConfigMap: "configMap", model.Secret: "secret"}

// readFailure is the typed failure of a volume's read of an object.
func readFailure(kind model.Kind, namespace, name string, err error) error {
	cause := CauseNotReadable
	if apierrors.IsNotFound(err) {
		cause = CauseObjectNotFound
	}
	return failure(cause, fmt.Errorf("couldn't get %s %s/%s: %w", volumeWord[kind], namespace, name, err))
}

// ContentHash is a short digest of a payload's paths and bytes, shown by
// /debug/volumes so that two nodes' copies can be compared at a glance, and
// compared by every remount with what the volume holds. xxHash64, not a
// cryptographic hash: nothing here defends against a chosen collision, and
// it hashes a 1 MiB payload in a tenth of SHA-256's time.
func ContentHash(files map[string][]byte) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := xxhash.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%d:%s%d:", len(p), p, len(files[p]))
		h.Write(files[p])
	}
	return fmt.Sprintf("%016x", h.Sum64())
}

func payloadBytes(payload map[string]atomicwriter.FileProjection) map[string][]byte {
	files := make(map[string][]byte, len(payload))
	for p, f := range payload {
		files[filepath.Clean(p)] = f.Data
	}
	return files
}
