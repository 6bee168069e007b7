package main

// The provider writes every kubeconfig it is configured with, client keys
// included, to a file in the temporary directory for Helm
// (writeKubeconfigToFile in pkg/provider/util.go) and never removes it: a
// day of ups, previews and syncs leaves dozens behind. This build gives the
// provider a temporary directory of its own and removes each kubeconfig copy
// as soon as it is written and closed. The programs this build serves declare
// no Helm resources, the only ones that would read the copy.

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

const privateTempPrefix = "pulumi-kubernetes-"

// usePrivateTempDir points TMPDIR at a new directory named after this
// process, removes the directories of earlier runs whose process is gone,
// and removes every kubeconfig copy written in the new one once closed.
func usePrivateTempDir() error {
	parent := os.TempDir()
	removeStaleTempDirs(parent)
	dir, err := os.MkdirTemp(parent, fmt.Sprintf("%s%d-", privateTempPrefix, os.Getpid()))
	if err != nil {
		return err
	}
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
	if err != nil {
		return err
	}
	if _, err := unix.InotifyAddWatch(fd, dir, unix.IN_CLOSE_WRITE); err != nil {
		return err
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		return err
	}
	go removeKubeconfigCopies(fd, dir)
	return nil
}

// removeKubeconfigCopies removes each kubeconfig* file closed after writing in dir.
func removeKubeconfigCopies(fd int, dir string) {
	buf := make([]byte, 64*(unix.SizeofInotifyEvent+unix.PathMax))
	for {
		n, err := unix.Read(fd, buf)
		if err != nil {
			if err == unix.EINTR {
				continue
			}
			return
		}
		for offset := 0; offset+unix.SizeofInotifyEvent <= n; {
			event := (*unix.InotifyEvent)(unsafe.Pointer(&buf[offset]))
			nameBytes := buf[offset+unix.SizeofInotifyEvent : offset+unix.SizeofInotifyEvent+int(event.Len)]
			name := strings.TrimRight(string(nameBytes), "\x00")
			if strings.HasPrefix(name, "kubeconfig") {
				_ = os.Remove(filepath.Join(dir, name))
			}
			offset += unix.SizeofInotifyEvent + int(event.Len)
		}
	}
}

// removeStaleTempDirs removes the private temporary directories of provider
// processes that are no longer running (the engine ends providers with
// SIGKILL, so none removes its own).
func removeStaleTempDirs(parent string) {
	entries, err := os.ReadDir(parent)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), privateTempPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if unix.Kill(pid, 0) == unix.ESRCH {
			_ = os.RemoveAll(filepath.Join(parent, e.Name()))
		}
	}
}
