package csidriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/nodeagent-io/nodeagent/internal/wholefile"
)

// record is what the driver remembers of one published volume, so that it
// serves the volume again after its own restart: the kubelet publishes an
// ephemeral volume once per pod start and never again. It is the publish
// call itself, less its secrets, so that a restart checks it by the same
// code as the call.
type record struct {
	VolumeID      string            `json:"volumeID"`
	TargetPath    string            `json:"targetPath"`
	VolumeContext map[string]string `json:"volumeContext"`
	// MountGroup is the call's volume_mount_group: the pod's fsGroup.
	MountGroup string `json:"mountGroup,omitempty"`
	ReadOnly   bool   `json:"readOnly,omitempty"`
}

// same says whether two publish calls ask for the same volume, which makes
// the second a no-op (the CSI spec's idempotency).
func (r record) same(o record) bool {
	return r.VolumeID == o.VolumeID && r.TargetPath == o.TargetPath && r.MountGroup == o.MountGroup &&
		r.ReadOnly == o.ReadOnly && maps.Equal(r.VolumeContext, o.VolumeContext)
}

// stateDir keeps one file per published volume, <volume id>.json, written
// whole (a temporary file, fsync, rename, fsync of the directory), so that
// a crash leaves either the old record or the new one.
type stateDir struct {
	dir string
}

const recordSuffix = ".json"

func (s stateDir) path(volumeID string) string {
	return filepath.Join(s.dir, volumeID+recordSuffix)
}

// validVolumeID keeps volume ids usable as file names. The kubelet's are
// csi-<sha256>; anything with a path separator or a leading dot is refused.
func validVolumeID(id string) error {
	if id == "" || len(id) > 200 || strings.ContainsAny(id, `/\`) || strings.HasPrefix(id, ".") {
		return fmt.Errorf("volume id %q cannot name a record: want at most 200 characters, no slash, no leading dot", id)
	}
	return nil
}

func (s stateDir) save(r record) error {
	data, err := json.Marshal(r)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return err
	}
	return wholefile.Write(s.path(r.VolumeID), data, 0o600)
}

func (s stateDir) remove(volumeID string) error {
	if err := os.Remove(s.path(volumeID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return wholefile.SyncDir(s.dir)
}

// unreadableDir is where load moves the records it cannot read.
const unreadableDir = "unreadable"

// moveAside moves the record file name to the unreadable directory, kept
// for a person to look at, and returns where it went. A record left in
// place would be read, and fail, at every start; its volume would stay
// unknown, and its pod Terminating for ever.
func (s stateDir) moveAside(name string) (string, error) {
	dir := filepath.Join(s.dir, unreadableDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	to := filepath.Join(dir, name)
	if err := os.Rename(filepath.Join(s.dir, name), to); err != nil {
		return "", err
	}
	return to, wholefile.SyncDir(s.dir)
}

// load returns every record, and the files it could not read, each moved
// aside (moveAside) and reported with where it went.
func (s stateDir) load() ([]record, []error) {
	entries, err := os.ReadDir(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, []error{err}
	}
	var out []record
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, wholefile.TempPrefix) {
			_ = os.Remove(filepath.Join(s.dir, name)) // a crash before its rename
			continue
		}
		if !strings.HasSuffix(name, recordSuffix) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(s.dir, name))
		var r record
		if err == nil {
			err = json.Unmarshal(data, &r)
		}
		if err == nil && r.VolumeID+recordSuffix != name {
			err = fmt.Errorf("names volume %q", r.VolumeID)
		}
		if err != nil {
			errs = append(errs, s.unreadable(name, err))
			continue
		}
		out = append(out, r)
	}
	return out, errs
}

// unreadable moves the record file name aside and says why and where.
func (s stateDir) unreadable(name string, why error) error {
	to, err := s.moveAside(name)
	if err != nil {
		return fmt.Errorf("record %s: %w; moving it aside failed: %v", name, why, err)
	}
	return fmt.Errorf("record %s: %w; moved to %s", name, why, to)
}
