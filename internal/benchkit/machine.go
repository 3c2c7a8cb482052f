package benchkit

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
)

// A Machine describes where a benchmark ran, for its report.
type Machine struct {
	CPUs   int    // runtime.NumCPU
	CPU    string // the first model name in /proc/cpuinfo, or "unknown"
	Kernel string // what uname -sr prints, or "unknown"
	Go     string // runtime.Version
	Commit string // the library's commit: see [Describe]
}

// Describe describes this machine, and the commit checked out in the git
// work tree that holds the directory repo (the library a benchmark
// measures, through its module's replace directive): its hash shortened
// to 12 digits, with " + changes" after it when a tracked file differs
// from it. It runs uname and git and reads /proc/cpuinfo; what it cannot
// learn it calls "unknown", and says so when git cannot tell the commit.
func Describe(repo string) Machine {
	m := Machine{CPUs: runtime.NumCPU(), Go: runtime.Version(), CPU: "unknown", Kernel: "unknown", Commit: commit(repo)}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if out, err := exec.Command("uname", "-sr").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	return m
}

// Items returns m as the items of a Markdown list, a line each: its CPUs,
// its kernel, the file system of the scratch directory unless fileSystem
// is "", its Go and the library's commit.
func (m Machine) Items(fileSystem string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- CPUs: %d (%s)\n- Kernel: %s\n", m.CPUs, m.CPU, m.Kernel)
	if fileSystem != "" {
		fmt.Fprintf(&b, "- File system of the scratch directory: %s\n", fileSystem)
	}
	fmt.Fprintf(&b, "- Go: %s\n- Library measured: commit %s\n", m.Go, m.Commit)
	return b.String()
}

// Mount names the mount that holds the directory dir, as "ext4 on /
// (/dev/sda1)": its type, its mount point and its device, from the
// longest mount point in /proc/self/mounts that is dir or above it. It
// returns "" if it cannot tell: outside Linux, or when no mount holds dir.
func Mount(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return ""
	}
	f, err := os.Open("/proc/self/mounts")
	if err != nil {
		return ""
	}
	defer f.Close()
	return mountOf(abs, f)
}

// mountOf is [Mount] of the absolute path abs, in the mount table mounts
// (a line a mount, fields as in /proc/self/mounts).
func mountOf(abs string, mounts io.Reader) string {
	best, bestLen := "", -1
	sc := bufio.NewScanner(mounts)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 {
			continue
		}
		mnt := fields[1]
		if (abs == mnt || strings.HasPrefix(abs, strings.TrimSuffix(mnt, "/")+"/")) && len(mnt) > bestLen {
			best, bestLen = fmt.Sprintf("%s on %s (%s)", fields[2], mnt, fields[0]), len(mnt)
		}
	}
	return best
}

// commit names the commit checked out in the git work tree that holds the
// directory repo, as [Describe] says.
func commit(repo string) string {
	out, err := exec.Command("git", "-C", repo, "rev-parse", "--short=12", "HEAD").Output()
	if err != nil {
		return "unknown (not run in a git checkout)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", repo, "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		c += " + changes"
	}
	return c
}
