//go:build unix

package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

type machine struct {
	cpus                         int
	cpu, kernel, fsys, goVersion string
	command, commit              string
}

func describeMachine(dir string) machine {
	m := machine{cpus: runtime.NumCPU(), goVersion: runtime.Version(), cpu: "unknown", kernel: "unknown", fsys: fileSystem(dir)}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:])
	}
	return m
}

// libraryCommit names the commit of the repository the benchmark runs in
// (the library it measures, through the module's replace directive), with
// "+ changes" when the work tree differs from it.
func libraryCommit() string {
	out, err := exec.Command("git", "-C", "..", "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown (not run in a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", "..", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += " + changes"
	}
	return c
}
