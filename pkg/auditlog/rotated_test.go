package auditlog

import (
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// The apiserver rotates its audit log at 100 MB by default: a window that
// spans a rotation is in the backups and the current file together, and
// the backups come first, compressed or not. Files beside the log that are
// not its backups are not read.
func TestGetsReadsRotatedBackups(t *testing.T) {
	dir := t.TempDir()
	get := func(at string) string {
		return line("ResponseComplete", "get", "/api/v1/namespaces/ns/configmaps/cm", "system:node:a", 200, at) + "\n"
	}
	write := func(name, content string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("audit-2026-01-01T00-00-02.000.log", get("2026-01-01T00:00:01.000000Z"))
	var gz []byte
	{
		path := filepath.Join(dir, "audit-2026-01-01T00-00-04.000.log.gz")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		z := gzip.NewWriter(f)
		if _, err := z.Write([]byte(get("2026-01-01T00:00:03.000000Z"))); err != nil {
			t.Fatal(err)
		}
		if err := z.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		gz, _ = os.ReadFile(path)
	}
	if len(gz) == 0 {
		t.Fatal("no compressed backup written")
	}
	write("audit.log", get("2026-01-01T00:00:05.000000Z"))
	write("audit-policy.yaml", get("2026-01-01T00:00:06.000000Z"))
	write("other.log", get("2026-01-01T00:00:07.000000Z"))

	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gets, err := Gets(filepath.Join(dir, "audit.log"), from, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var seconds []int
	for _, g := range gets {
		seconds = append(seconds, g.Received.Second())
	}
	if len(seconds) != 3 || seconds[0] != 1 || seconds[1] != 3 || seconds[2] != 5 {
		t.Errorf("GETs received at seconds %v, want 1, 3 and 5 (backup, compressed backup, current file)", seconds)
	}
}
