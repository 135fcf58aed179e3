package atomicwriter

import (
	"encoding/binary"
	"io/fs"
	"os"
	"syscall"
)

// listDir lists the directory at path, in the order it gives, each entry
// with its type as the listing gives it (an lstat where the file system
// does not). It reads the listing into a buffer of its own: os.ReadDir
// wraps the directory in an os.File, one more system call and its
// allocations for every listing.
func listDir(path string) ([]dirEntry, error) {
	fd, err := openRaw(path, syscall.O_RDONLY|syscall.O_DIRECTORY, 0)
	if err != nil {
		return nil, err
	}
	defer syscall.Close(fd)
	bufp := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(bufp)
	var entries []dirEntry
	for {
		n, err := syscall.ReadDirent(fd, *bufp)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &fs.PathError{Op: "getdents", Path: path, Err: err}
		}
		if n <= 0 {
			return entries, nil
		}
		if entries, err = appendDirents(entries, path, (*bufp)[:n]); err != nil {
			return nil, err
		}
	}
}

// appendDirents appends the entries of buf, records of the kernel's
// struct linux_dirent64 (inode 8 bytes, offset 8, record length 2, type 1,
// then the name, NUL-terminated), leaving out "." and "..".
func appendDirents(entries []dirEntry, dir string, buf []byte) ([]dirEntry, error) {
	const header = 19
	for len(buf) >= header {
		reclen := int(binary.NativeEndian.Uint16(buf[16:18]))
		if reclen < header || reclen > len(buf) {
			return nil, &fs.PathError{Op: "getdents", Path: dir, Err: syscall.EIO}
		}
		rec := buf[:reclen]
		buf = buf[reclen:]
		name := rec[header:]
		for i, c := range name {
			if c == 0 {
				name = name[:i]
				break
			}
		}
		if string(name) == "." || string(name) == ".." {
			continue
		}
		entry := dirEntry{name: string(name)}
		switch rec[18] {
		case syscall.DT_REG:
		case syscall.DT_DIR:
			entry.typ = fs.ModeDir
		case syscall.DT_LNK:
			entry.typ = fs.ModeSymlink
		case syscall.DT_FIFO:
			entry.typ = fs.ModeNamedPipe
		case syscall.DT_SOCK:
			entry.typ = fs.ModeSocket
		case syscall.DT_CHR:
			entry.typ = fs.ModeDevice | fs.ModeCharDevice
		case syscall.DT_BLK:
			entry.typ = fs.ModeDevice
		default: // DT_UNKNOWN: the file system does not say
			info, err := os.Lstat(dir + "/" + entry.name)
			if err != nil {
				return nil, err
			}
			entry.typ = info.Mode().Type()
		}
		entries = append(entries, entry)
	}
	return entries, nil
}
