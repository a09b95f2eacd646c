package chaos

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// netFaults drops packets between 127.0.0.1 endpoints with iptables. Every
// node runs with its own group id, so a rule "-o lo -m owner --gid-owner
// G --dport P -j DROP" cuts what that node sends to port P and nothing
// else (source addresses on loopback cannot tell nodes apart). The rules
// live in a chain of this run's own (SHALE-CHAOS-<pid>), jumped to from
// OUTPUT, removed by clear. Without root or iptables, ok is false and the
// schedules skip network partitions (docs/reliability.md).
type netFaults struct {
	ok    bool
	why   string // why not ok
	chain string
	log   *slog.Logger

	mu    sync.Mutex
	rules map[string][]string // by name: the rule's match arguments
}

func newNetFaults(log *slog.Logger) *netFaults {
	nf := &netFaults{chain: fmt.Sprintf("SHALE-CHAOS-%d", os.Getpid()), log: log, rules: map[string][]string{}}
	if os.Getuid() != 0 {
		nf.why = "not root"
		return nf
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		nf.why = "no iptables (apt-get install -y iptables)"
		return nf
	}
	if out, err := exec.Command("iptables", "-N", nf.chain).CombinedOutput(); err != nil {
		nf.why = fmt.Sprintf("iptables -N: %v: %s", err, strings.TrimSpace(string(out)))
		return nf
	}
	if out, err := exec.Command("iptables", "-I", "OUTPUT", "-j", nf.chain).CombinedOutput(); err != nil {
		exec.Command("iptables", "-X", nf.chain).Run()
		nf.why = fmt.Sprintf("iptables -I OUTPUT: %v: %s", err, strings.TrimSpace(string(out)))
		return nf
	}
	if out, err := exec.Command("iptables", "-A", nf.chain, "-o", "lo", "-p", "tcp", "-m", "owner", "--gid-owner", "1", "--dport", "1", "-j", "DROP").CombinedOutput(); err != nil {
		nf.clearChain()
		nf.why = fmt.Sprintf("iptables owner match: %v: %s", err, strings.TrimSpace(string(out)))
		return nf
	}
	exec.Command("iptables", "-F", nf.chain).Run()
	nf.ok = true
	return nf
}

// drop adds rules dropping what gid sends to each port, under name.
func (nf *netFaults) drop(name string, gid uint32, ports ...int) error {
	if !nf.ok {
		return fmt.Errorf("network faults unavailable: %s", nf.why)
	}
	nf.mu.Lock()
	defer nf.mu.Unlock()
	for _, p := range ports {
		rule := []string{"-o", "lo", "-p", "tcp", "-m", "owner", "--gid-owner", fmt.Sprint(gid), "--dport", fmt.Sprint(p), "-j", "DROP"}
		if out, err := exec.Command("iptables", append([]string{"-A", nf.chain}, rule...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("iptables: %v: %s", err, out)
		}
		nf.rules[name] = append(nf.rules[name], strings.Join(rule, " "))
	}
	return nil
}

// undrop removes the rules added under name.
func (nf *netFaults) undrop(name string) {
	nf.mu.Lock()
	defer nf.mu.Unlock()
	for _, r := range nf.rules[name] {
		if out, err := exec.Command("iptables", append([]string{"-D", nf.chain}, strings.Fields(r)...)...).CombinedOutput(); err != nil {
			nf.log.Warn("iptables -D", "rule", r, "err", err, "out", string(out))
		}
	}
	delete(nf.rules, name)
}

// clear removes every rule and the chain.
func (nf *netFaults) clear() {
	if !nf.ok {
		return
	}
	nf.mu.Lock()
	nf.rules = map[string][]string{}
	nf.mu.Unlock()
	nf.clearChain()
	nf.ok = false
}

func (nf *netFaults) clearChain() {
	exec.Command("iptables", "-D", "OUTPUT", "-j", nf.chain).Run()
	exec.Command("iptables", "-F", nf.chain).Run()
	exec.Command("iptables", "-X", nf.chain).Run()
}

// port is the port of a host:port or URL.
func port(addr string) int {
	addr = strings.TrimPrefix(strings.TrimPrefix(addr, "http://"), "nats://")
	_, p, _ := net.SplitHostPort(addr)
	var n int
	fmt.Sscan(p, &n)
	return n
}

func dialOK(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	c.Close()
	return true
}
