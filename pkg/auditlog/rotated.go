package auditlog

import (
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// logFiles are the files that hold the audit log at path, oldest first:
// the backups the apiserver rotated out, then path itself. The apiserver
// rotates its log file once it reaches --audit-log-maxsize megabytes, and
// at the default 0 that means 100 MB, which a run of a thousand nodes
// writes in minutes: reading path alone would miss most of its window.
// A backup is named after path with the time of its rotation before the
// extension (audit-2026-11-26T01-20-00.000.log, .gz when compressed), so
// the names sort in time order.
func logFiles(path string) ([]string, error) {
	ext := filepath.Ext(path)
	prefix := strings.TrimSuffix(path, ext) + "-"
	matches, err := filepath.Glob(globEscape(prefix) + "*" + ext + "*")
	if err != nil {
		return nil, err
	}
	var backups []string
	for _, m := range matches {
		rest := strings.TrimPrefix(m, prefix)
		if strings.HasSuffix(rest, ext) || strings.HasSuffix(rest, ext+".gz") {
			backups = append(backups, m)
		}
	}
	sort.Strings(backups)
	return append(backups, path), nil
}

// globEscape quotes the characters filepath.Glob treats as patterns.
func globEscape(s string) string {
	r := strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`)
	return r.Replace(s)
}

// openLogFile opens one of logFiles' files, decompressing a .gz backup.
func openLogFile(path string) (io.ReadCloser, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading the apiserver's audit log: %w", err)
	}
	if !strings.HasSuffix(path, ".gz") {
		return file, nil
	}
	z, err := gzip.NewReader(file)
	if err != nil {
		file.Close()
		return nil, fmt.Errorf("reading the apiserver's audit log %s: %w", path, err)
	}
	return struct {
		io.Reader
		io.Closer
	}{z, file}, nil
}
