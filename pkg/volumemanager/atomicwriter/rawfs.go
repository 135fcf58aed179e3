package atomicwriter

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The writer's file system calls on its hot path: a volume's update. An
// update of the CSI driver's node under load is mostly system calls, and
// where each one is dear (a virtual machine's), their count is the cost.
// os.Open registers every file it opens with Go's poller, which a regular
// file or a directory refuses, at two to four more calls an open, and
// os.RemoveAll probes each entry with calls that fail before the one that
// works. These helpers open without the poller and remove a tree whose
// entries' types the listing gives (make bench: the writer's benchmarks).

// openRaw opens path with flags, retrying an interrupted call.
func openRaw(path string, flags int, mode uint32) (int, error) {
	for {
		fd, err := syscall.Open(path, flags|syscall.O_CLOEXEC, mode)
		if err != syscall.EINTR {
			if err != nil {
				return -1, &fs.PathError{Op: "open", Path: path, Err: err}
			}
			return fd, nil
		}
	}
}

// dirEntry is an entry of a directory listing: its name and its type
// (fs.FileMode's type bits).
type dirEntry struct {
	name string
	typ  fs.FileMode
}

func (e dirEntry) Name() string      { return e.name }
func (e dirEntry) Type() fs.FileMode { return e.typ }
func (e dirEntry) IsDir() bool       { return e.typ.IsDir() }

// readBuffers holds the buffers fileEquals and listDir read into.
var readBuffers = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// fileEquals reports whether the file at path holds exactly want.
func fileEquals(path string, want []byte) (bool, error) {
	fd, err := openRaw(path, syscall.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return false, err
	}
	defer syscall.Close(fd)
	bufp := readBuffers.Get().(*[]byte)
	defer readBuffers.Put(bufp)
	buf, rest := *bufp, want
	for {
		n, err := syscall.Read(fd, buf)
		switch {
		case err == syscall.EINTR:
			continue
		case err != nil:
			return false, &fs.PathError{Op: "read", Path: path, Err: err}
		case n == 0:
			return len(rest) == 0, nil
		case n > len(rest) || !bytes.Equal(buf[:n], rest[:n]):
			return false, nil
		}
		rest = rest[n:]
	}
}

// writeNewFile creates the file at path, which must not exist, with data
// and mode. The mode is set again after the write, on the descriptor,
// where the process's umask may have cleared bits of it at the create.
func writeNewFile(path string, data []byte, mode os.FileMode) error {
	fd, err := openRaw(path, syscall.O_WRONLY|syscall.O_CREAT|syscall.O_EXCL, uint32(mode.Perm()))
	if err != nil {
		return err
	}
	err = writeAll(fd, data)
	if err == nil && umaskClears(mode) {
		err = ignoringEINTR(func() error { return syscall.Fchmod(fd, uint32(mode.Perm())) })
	}
	if closeErr := syscall.Close(fd); err == nil && closeErr != nil {
		err = closeErr
	}
	if err != nil {
		return &fs.PathError{Op: "write", Path: path, Err: err}
	}
	return nil
}

func writeAll(fd int, data []byte) error {
	for len(data) > 0 {
		n, err := syscall.Write(fd, data)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		data = data[n:]
	}
	return nil
}

func ignoringEINTR(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}

// removeTree removes the directory at path and everything in it, one call
// per entry where os.RemoveAll makes three, from a listing that gives each
// entry's type. A path that does not exist is not an error; a path that
// is not a directory is left to os.RemoveAll.
func removeTree(path string) error {
	entries, err := listDir(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return os.RemoveAll(path)
	}
	for _, e := range entries {
		child := path + "/" + e.Name()
		switch {
		case e.IsDir():
			err = removeTree(child)
		default:
			err = ignoringEINTR(func() error { return syscall.Unlink(child) })
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				err = &fs.PathError{Op: "unlink", Path: child, Err: err}
			} else {
				err = nil
			}
		}
		if err != nil {
			return err
		}
	}
	err = ignoringEINTR(func() error { return syscall.Rmdir(path) })
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return &fs.PathError{Op: "rmdir", Path: path, Err: err}
	}
	return nil
}

// processUmask is the process's file mode creation mask, read once from
// /proc/self/status (Linux 4.7 and later) without changing it: nothing in
// nodeagent sets it. ok is false where it cannot be read.
var processUmask = sync.OnceValues(func() (mask fs.FileMode, ok bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	for line := range strings.Lines(string(data)) {
		if value, found := strings.CutPrefix(line, "Umask:"); found {
			m, err := strconv.ParseUint(strings.TrimSpace(value), 8, 32)
			return fs.FileMode(m), err == nil
		}
	}
	return 0, false
})

// umaskClears says whether the process's umask may have cleared bits of
// mode at a create, so that the mode must be set again after it.
func umaskClears(mode fs.FileMode) bool {
	mask, ok := processUmask()
	return !ok || mode.Perm()&mask != 0
}

// makeGeneration makes a new generation directory in dir, mode 0755, named
// as the kubelet names them (the time, then a random number), and returns
// its path.
func makeGeneration(dir string) (string, error) {
	prefix := filepath.Join(dir, time.Now().UTC().Format("..2006_01_02_15_04_05."))
	for range 100 {
		path := prefix + strconv.FormatUint(uint64(rand.Uint32()), 10)
		err := ignoringEINTR(func() error { return syscall.Mkdir(path, 0o755) })
		if err == syscall.EEXIST {
			continue
		}
		if err != nil {
			return "", &fs.PathError{Op: "mkdir", Path: path, Err: err}
		}
		if umaskClears(0o755) {
			if err := os.Chmod(path, 0o755); err != nil {
				syscall.Rmdir(path)
				return "", err
			}
		}
		return path, nil
	}
	return "", &fs.PathError{Op: "mkdir", Path: prefix + "*", Err: fs.ErrExist}
}
