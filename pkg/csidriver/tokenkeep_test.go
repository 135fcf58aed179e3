package csidriver

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodeagent-io/nodeagent/internal/wholefile"
)

// The keeper gives back each volume's latest token after a restart, root's
// alone; an expired one, a crash's leftover and a file that does not parse
// are removed, and no error quotes a token.
func TestTokenKeeper(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tokens")
	k, err := newTokenKeeper(dir, func(string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for id, tok := range map[string]podToken{
		"csi-a":       {value: "old-a", expires: now.Add(time.Hour)},
		"csi-b":       {value: "secret-b", expires: now.Add(time.Hour)},
		"csi-expired": {value: "secret-expired", expires: now.Add(-time.Second)},
		"csi-gone":    {value: "secret-gone"},
	} {
		if err := k.keep(id, tok); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.keep("csi-a", podToken{value: "secret-a", expires: now.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := k.forget("csi-gone"); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{wholefile.TempPrefix + "csi-c.token-1": "half", "csi-bad.token": `{"token":`, "stray": "x"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	tokens, errs := k.load(now)
	if got := tokens["csi-a"]; got.value != "secret-a" || !got.expires.Equal(now.Add(2*time.Hour)) {
		t.Errorf("csi-a: %q expiring %v, want its latest token", got.value, got.expires)
	}
	if len(tokens) != 2 || tokens["csi-b"].value != "secret-b" {
		t.Errorf("tokens kept: %d (csi-b %q), want csi-a's and csi-b's", len(tokens), tokens["csi-b"].value)
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "csi-bad") {
		t.Errorf("errors %v, want one naming csi-bad", errs)
	}
	for _, err := range errs {
		if strings.Contains(err.Error(), "secret") {
			t.Errorf("an error quotes a token: %v", err)
		}
	}
	entries, _ := os.ReadDir(dir)
	var left []string
	for _, e := range entries {
		left = append(left, e.Name())
		if info, err := e.Info(); err != nil || info.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v (%v), want 0600", e.Name(), info.Mode(), err)
		}
	}
	if want := []string{"csi-a.token", "csi-b.token"}; !slices.Equal(left, want) {
		t.Errorf("files left: %v, want %v", left, want)
	}
	if info, err := os.Stat(dir); err != nil || info.Mode().Perm() != 0o700 {
		t.Errorf("the directory's mode: %v (%v), want 0700", info.Mode(), err)
	}
}

// A directory that is not in memory is refused, with what to do; a nil
// keeper keeps nothing.
func TestTokenDirMustBeInMemory(t *testing.T) {
	err := inMemory("/proc")
	var notInMemory *notInMemoryError
	if !errors.As(err, &notInMemory) || !strings.Contains(err.Error(), "tmpfs") {
		t.Errorf("/proc: %v, want a notInMemoryError that names tmpfs", err)
	}
	if _, err := newTokenKeeper(filepath.Join(t.TempDir(), "tokens"), func(string) error { return errors.New("on a disk") }); err == nil {
		t.Error("a keeper of a directory on a disk was made")
	}
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		if err := inMemory("/dev/shm"); err != nil {
			t.Errorf("/dev/shm: %v", err)
		}
	}
	k, err := newTokenKeeper("", nil)
	if k != nil || err != nil {
		t.Fatalf("no directory: %v, %v; want no keeper", k, err)
	}
	if err := k.keep("csi-a", podToken{value: "x"}); err != nil {
		t.Error(err)
	}
	if tokens, errs := k.load(time.Now()); tokens != nil || errs != nil {
		t.Errorf("a nil keeper loaded %v, %v", tokens, errs)
	}
}
