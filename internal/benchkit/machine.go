package benchkit

import (
	"bufio"
	"os"
	"os/exec"
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
