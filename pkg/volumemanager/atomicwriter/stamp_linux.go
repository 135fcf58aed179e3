package atomicwriter

import (
	"io/fs"
	"syscall"
	"time"
)

// fileID is an entry's device, inode, change time and size; valid is
// false where the platform does not give them.
type fileID struct {
	valid               bool
	dev, ino            uint64
	ctimeSec, ctimeNsec int64
	size                int64
}

func idOf(info fs.FileInfo) fileID {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return fileID{}
	}
	return fileID{valid: true, dev: st.Dev, ino: st.Ino, ctimeSec: st.Ctim.Sec, ctimeNsec: st.Ctim.Nsec, size: st.Size}
}

func (id fileID) ctime() time.Time { return time.Unix(id.ctimeSec, id.ctimeNsec) }
