package csidriver

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/nodeagent-io/nodeagent/internal/wholefile"
)

// tokenKeeper keeps each volume's pod token, where the driver reads as
// the pods, across the driver's own restarts: a restarted driver then
// opens its watches at once, where it would otherwise wait for the
// kubelet's next publish call of each volume (a pod sync, 60 to 90 s) and
// serve no update meanwhile.
//
// The tokens stay in memory: the directory must be on a tmpfs or ramfs
// (newTokenKeeper refuses any other, and the driver then keeps no token),
// as the kubelet keeps the pods' own
// projected tokens, so a node's restart empties it and no token reaches a
// disk. The directory is root's alone (0700, files 0600), a file per
// volume written whole and removed with the volume; the volume records,
// the logs and /debug/volumes never hold a token. A nil keeper keeps
// nothing.
type tokenKeeper struct {
	dir string
}

// tokenSuffix ends each kept token's file name, <volume id>.token.
const tokenSuffix = ".token"

// keptToken is a token's file.
type keptToken struct {
	Token   string    `json:"token"`
	Expires time.Time `json:"expirationTimestamp,omitzero"`
}

// memoryFilesystems are the statfs types a kept token may be written on.
var memoryFilesystems = map[int64]string{unix.TMPFS_MAGIC: "tmpfs", unix.RAMFS_MAGIC: "ramfs"}

// notInMemoryError is a token directory on a filesystem that may reach a
// disk.
type notInMemoryError struct {
	dir    string
	fsType int64
}

func (e *notInMemoryError) Error() string {
	return fmt.Sprintf("--token-dir %s is not on a tmpfs (filesystem type %#x), where the pods' tokens would reach the node's disk: "+
		"give a directory on a tmpfs of the node (the chart's csi.tokenDir), such as under /run, or none", e.dir, e.fsType)
}

// inMemory says whether dir is on a tmpfs or ramfs.
func inMemory(dir string) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return fmt.Errorf("--token-dir %s: %w", dir, err)
	}
	if _, ok := memoryFilesystems[int64(st.Type)]; !ok {
		return &notInMemoryError{dir: dir, fsType: int64(st.Type)}
	}
	return nil
}

// newTokenKeeper makes dir (root's alone) and checks with onMemory that
// it is in memory; an empty dir keeps nothing.
func newTokenKeeper(dir string, onMemory func(string) error) (*tokenKeeper, error) {
	if dir == "" {
		return nil, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--token-dir: %w", err)
	}
	if err := onMemory(dir); err != nil {
		return nil, err
	}
	// MkdirAll leaves an existing directory's mode, such as a hostPath's.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--token-dir: %w", err)
	}
	return &tokenKeeper{dir: dir}, nil
}

func (k *tokenKeeper) path(volumeID string) string {
	return filepath.Join(k.dir, volumeID+tokenSuffix)
}

// keep replaces volumeID's kept token with t.
func (k *tokenKeeper) keep(volumeID string, t podToken) error {
	if k == nil {
		return nil
	}
	data, err := json.Marshal(keptToken{Token: t.value, Expires: t.expires})
	if err != nil {
		return err
	}
	if err := wholefile.Write(k.path(volumeID), data, 0o600); err != nil {
		return fmt.Errorf("keeping the pod's token of volume %s: %w", volumeID, err)
	}
	return nil
}

// forget removes volumeID's kept token, if any.
func (k *tokenKeeper) forget(volumeID string) error {
	if k == nil {
		return nil
	}
	if err := os.Remove(k.path(volumeID)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing the pod's token of volume %s: %w", volumeID, err)
	}
	return nil
}

// load returns the kept tokens by volume id, but those expired at now,
// which it removes, as it removes what a crash left half-written and what
// it cannot read. The errors name files, never a token.
func (k *tokenKeeper) load(now time.Time) (map[string]podToken, []error) {
	if k == nil {
		return nil, nil
	}
	entries, err := os.ReadDir(k.dir)
	if err != nil {
		return nil, []error{fmt.Errorf("reading the kept tokens: %w", err)}
	}
	tokens := map[string]podToken{}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		volumeID, ok := strings.CutSuffix(name, tokenSuffix)
		if strings.HasPrefix(name, wholefile.TempPrefix) || !ok || !e.Type().IsRegular() {
			errs = appendErr(errs, os.Remove(filepath.Join(k.dir, name)))
			continue
		}
		t, err := k.read(volumeID)
		if err != nil || t.expired(now) {
			errs = appendErr(errs, err)
			errs = appendErr(errs, k.forget(volumeID))
			continue
		}
		tokens[volumeID] = t
	}
	return tokens, errs
}

func (k *tokenKeeper) read(volumeID string) (podToken, error) {
	data, err := os.ReadFile(k.path(volumeID))
	if err != nil {
		return podToken{}, err
	}
	var kept keptToken
	if err := json.Unmarshal(data, &kept); err != nil || kept.Token == "" {
		return podToken{}, fmt.Errorf("the kept token of volume %s does not parse; removing it", volumeID)
	}
	return podToken{value: kept.Token, expires: kept.Expires}, nil
}

func appendErr(errs []error, err error) []error {
	if err != nil {
		errs = append(errs, err)
	}
	return errs
}
