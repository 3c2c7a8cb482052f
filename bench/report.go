//go:build unix

package main

import (
	"bufio"
	"os"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

type machine struct {
	cpus                         int
	cpu, kernel, fsys, goVersion string
	command                      string
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
