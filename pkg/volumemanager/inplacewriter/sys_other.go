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

// hasOwner cannot tell a file's owner here; the owner is set again.
func hasOwner(_ fs.FileInfo, user *int64) bool { return user == nil }
