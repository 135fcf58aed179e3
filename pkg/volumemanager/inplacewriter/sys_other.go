//go:build !linux

package inplacewriter

import (
	"io/fs"
	"os"
)

// preallocate is a no-op where fallocate(2) does not exist.
func preallocate(*os.File, int64) error { return nil }

// hasGroup cannot tell a file's group here; the group is set again.
func hasGroup(_ fs.FileInfo, fsGroup *int64) bool { return fsGroup == nil }
