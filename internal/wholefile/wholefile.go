// Package wholefile writes a file whole or not at all: the data goes to a
// temporary file beside it (named with TempPrefix, so that whoever reads
// the directory can tell a leftover of a crash), is synced, given its
// mode, and renamed over the file; then the directory is synced. A reader
// sees the old content or the new, never part of either, and so does the
// machine after a crash.
package wholefile

import (
	"os"
	"path/filepath"
)

// TempPrefix starts the name of every temporary file Write makes.
const TempPrefix = ".tmp-"

// Write replaces path with data, with mode perm.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, TempPrefix+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // after the rename, there is nothing to remove
	if err := writeAndClose(tmp, data, perm); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	return SyncDir(dir)
}

// writeAndClose writes data to f, gives it perm, syncs and closes it.
func writeAndClose(f *os.File, data []byte, perm os.FileMode) error {
	_, err := f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// SyncDir syncs a directory, so that the entries renamed or removed in it
// last through a crash.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
