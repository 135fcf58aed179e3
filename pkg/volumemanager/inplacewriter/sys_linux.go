package inplacewriter

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// preallocate reserves the blocks of the first size bytes of f without
// changing its size, so that the write that follows cannot run out of
// space halfway. A filesystem that cannot preallocate is written anyway.
func preallocate(f *os.File, size int64) error {
	if size == 0 {
		return nil
	}
	err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
	if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.ENOSYS) {
		return nil
	}
	return err
}

// hasOwner says whether info's owner is user, or user is nil.
func hasOwner(info fs.FileInfo, user *int64) bool {
	if user == nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int64(st.Uid) == *user
}

// hasGroup says whether the file's group is fsGroup (or fsGroup is nil).
func hasGroup(info fs.FileInfo, fsGroup *int64) bool {
	if fsGroup == nil {
		return true
	}
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && int64(st.Gid) == *fsGroup
}
