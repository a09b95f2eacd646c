package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/sdk"
)

// Severities of a doctor finding, worst last.
const (
	sevOK      = "ok"
	sevInfo    = "info"
	sevWarning = "warning"
	sevError   = "error"
)

// finding is one line of `shale doctor`.
type finding struct {
	Severity string `json:"severity"`
	Check    string `json:"check"`   // nodes, nats, bucket, partitions, balance, clock, disk, certificates
	Subject  string `json:"subject"` // what it is about: a node, a stream, a topic
	Message  string `json:"message"`
}

// doctorLimits are the thresholds of the checks.
type doctorLimits struct {
	clockSkew     time.Duration // between two nodes' clocks
	diskWarn      float64       // used fraction of a data disk
	diskError     float64
	certWarn      time.Duration // a certificate expiring sooner
	certError     time.Duration
	skewTolerance float64 // a broker's leader or replica count above mean*(1+x)+1
}

var defaultDoctorLimits = doctorLimits{clockSkew: 2 * time.Second, diskWarn: 0.85, diskError: 0.95,
	certWarn: 30 * 24 * time.Hour, certError: 7 * 24 * time.Hour, skewTolerance: 0.2}

// errDoctorFindings makes the exit code 1 when a finding is an error.
var errDoctorFindings = errors.New("the cluster has errors")

func newDoctorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "doctor --admin ADDR[,ADDR...]",
		Short: "check a whole cluster: nodes, NATS, the bucket, partitions, balance, clocks, disks, certificates",
		Long: `Ask every node behind --admin (all of the cluster's admin addresses) for its
health checks, and the cluster through the Kafka protocol (--bootstrap, by
default the addresses the nodes advertise) for its brokers and partitions,
and print one finding per check with its severity: ok, info, warning or
error. The exit code is 1 when any finding is an error, 0 otherwise.

Checks: every node answers and is registered and unfenced; each node's NATS
connection, and every control-plane stream has a leader and all its replicas
current; the bucket takes a write, read and delete from every node, and
upload lag; offline and under-replicated partitions, brokers assigned
replicas that are not live; leader and replica skew between brokers; clock
skew between nodes; data disk usage (warning from 85%, error from 95%, or
when tiering reports the disk full); certificate expiry (warning within 30
days, error within 7 or expired).`,
		Example: `  shale doctor --admin 127.0.0.1:9644,127.0.0.1:9645,127.0.0.1:9646
  shale doctor --admin https://shale-1:9644 --admin-ca ca.crt --admin-token-file token --output json`,
		Args: noArgs,
	}
	admins := addAdmin(cmd, "admin HTTP address of every node (host:port or URL); repeatable or comma-separated")
	g := addGlobals(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		client, addrs, err := admins.client(g.timeout)
		if err != nil {
			return err
		}
		explicit := cmd.Flags().Changed("bootstrap") || os.Getenv("SHALE_BOOTSTRAP") != ""
		fs := doctor(cmd.Context(), client, addrs, g, explicit, defaultDoctorLimits, time.Now)
		if g.output.json() {
			if err := writeJSON(cmd.OutOrStdout(), fs); err != nil {
				return err
			}
		} else {
			t := newTable(cmd.OutOrStdout(), "SEVERITY", "CHECK", "SUBJECT", "MESSAGE")
			for _, f := range fs {
				t.row(strings.ToUpper(f.Severity), f.Check, f.Subject, f.Message)
			}
			t.flush()
		}
		for _, f := range fs {
			if f.Severity == sevError {
				return errDoctorFindings
			}
		}
		return nil
	}
	return cmd
}

// nodeAnswer is one node's health with the time it took to get it.
type nodeAnswer struct {
	addr     string
	health   adminapi.NodeHealth
	err      error
	sent, at time.Time
}

// doctor runs every check and returns the findings, errors first.
func doctor(ctx context.Context, client adminapi.Client, addrs []string, g *cliGlobals, explicitBootstrap bool,
	lim doctorLimits, now func() time.Time) []finding {
	answers := make([]nodeAnswer, len(addrs))
	var wg sync.WaitGroup
	for i, a := range addrs {
		wg.Go(func() {
			answers[i].addr, answers[i].sent = a, now()
			answers[i].health, answers[i].err = client.NodeHealth(ctx, a)
			answers[i].at = now()
		})
	}
	wg.Wait()
	var fs []finding
	add := func(sev, check, subject, format string, args ...any) {
		fs = append(fs, finding{Severity: sev, Check: check, Subject: subject, Message: fmt.Sprintf(format, args...)})
	}
	var up []nodeAnswer
	for _, a := range answers {
		if a.err != nil {
			add(sevError, "nodes", a.addr, "admin listener does not answer: %v", a.err)
			continue
		}
		up = append(up, a)
	}
	if len(up) > 0 {
		add(sevOK, "nodes", fmt.Sprintf("%d of %d", len(up), len(addrs)), "admin listeners answer")
	}
	doctorNATS(add, up)
	for _, a := range up {
		subject := fmt.Sprintf("node %d", a.health.NodeID)
		doctorBucket(add, subject, a.health.Bucket)
		doctorDisk(add, subject, a.health.Disk, lim)
		doctorCertificates(add, subject, a.health.Certificates, a.at, lim)
	}
	doctorClocks(add, up, lim)
	doctorCluster(ctx, add, up, g, explicitBootstrap, lim)
	rank := map[string]int{sevError: 0, sevWarning: 1, sevInfo: 2, sevOK: 3}
	slices.SortStableFunc(fs, func(a, b finding) int { return rank[a.Severity] - rank[b.Severity] })
	return fs
}

type addFinding func(sev, check, subject, format string, args ...any)

// doctorNATS reports each node's connection, and the control-plane
// streams once for the cluster: a stream without a leader is an error; the
// NATS servers holding replicas that are offline or behind are named once
// each, with how many streams they leave short.
func doctorNATS(add addFinding, up []nodeAnswer) {
	var streams []adminapi.StreamHealth
	seenFrom := ""
	for _, a := range up {
		subject := fmt.Sprintf("node %d", a.health.NodeID)
		n := a.health.NATS
		switch {
		case !n.Connected:
			add(sevError, "nats", subject, "not connected to NATS: its leaderships stop when its session expires")
		case n.Error != "":
			add(sevError, "nats", subject, "connected to %s but the control-plane streams cannot be read: %s", n.Server, n.Error)
		default:
			add(sevOK, "nats", subject, "connected to %s", n.Server)
			if streams == nil {
				streams, seenFrom = n.Streams, subject
			}
		}
	}
	if streams == nil {
		return
	}
	short := map[string][]string{} // NATS server -> streams it leaves short
	leaderless := 0
	for _, s := range streams {
		if s.Leader == "" {
			add(sevError, "nats", s.Name, "no leader (seen from %s): the control plane cannot write it", seenFrom)
			leaderless++
			continue
		}
		for _, p := range s.Peers {
			if p.Offline || !p.Current {
				short[p.Name] = append(short[p.Name], s.Name)
			}
		}
	}
	for _, server := range slices.Sorted(maps.Keys(short)) {
		add(sevWarning, "nats", server, "NATS server offline or behind: %d of %d control-plane streams are short of a replica (seen from %s)",
			len(short[server]), len(streams), seenFrom)
	}
	if leaderless == 0 && len(short) == 0 {
		add(sevOK, "nats", "streams", "%d control-plane streams, each with a leader and every replica current", len(streams))
	}
}

func doctorBucket(add addFinding, subject string, b *adminapi.BucketHealth) {
	if b == nil {
		return
	}
	if !b.Reachable {
		add(sevError, "bucket", subject, "the bucket %s refuses or does not answer a probe write: %s", b.Location, b.Error)
		return
	}
	add(sevOK, "bucket", subject, "%s takes writes, reads and deletes; upload lag %d segments, %d bytes; %d remote deletes in quarantine (%d bytes)",
		b.Location, b.UploadLagSegments, b.UploadLagBytes, b.QuarantinedEntries, b.QuarantinedBytes)
}

func doctorDisk(add addFinding, subject string, d adminapi.DiskHealth, lim doctorLimits) {
	if d.TotalBytes == 0 {
		add(sevWarning, "disk", subject, "the size of %s is unknown", d.Path)
		return
	}
	used := 1 - float64(d.FreeBytes)/float64(d.TotalBytes)
	switch {
	case d.Full:
		add(sevError, "disk", subject, "%s is full: tiering cannot free space (uploads behind?)", d.Path)
	case used >= lim.diskError:
		add(sevError, "disk", subject, "%s is %.0f%% used", d.Path, used*100)
	case used >= lim.diskWarn:
		add(sevWarning, "disk", subject, "%s is %.0f%% used", d.Path, used*100)
	default:
		add(sevOK, "disk", subject, "%s is %.0f%% used", d.Path, used*100)
	}
}

func doctorCertificates(add addFinding, subject string, certs []adminapi.CertificateHealth, now time.Time, lim doctorLimits) {
	for _, c := range certs {
		what := fmt.Sprintf("%s certificate %s", c.Use, c.Path)
		left := c.NotAfter.Sub(now)
		switch {
		case c.Error != "":
			add(sevError, "certificates", subject, "%s: %s", what, c.Error)
		case left <= 0:
			add(sevError, "certificates", subject, "%s expired on %s", what, c.NotAfter.Format(time.DateOnly))
		case left < lim.certError:
			add(sevError, "certificates", subject, "%s expires in %s", what, left.Round(time.Hour))
		case left < lim.certWarn:
			add(sevWarning, "certificates", subject, "%s expires in %s", what, left.Round(time.Hour))
		default:
			add(sevOK, "certificates", subject, "%s valid until %s", what, c.NotAfter.Format(time.DateOnly))
		}
	}
}

// doctorClocks estimates each node's clock offset from the caller's (the
// node's time against the middle of the request) and compares the nodes'.
func doctorClocks(add addFinding, up []nodeAnswer, lim doctorLimits) {
	if len(up) < 2 {
		return
	}
	type offset struct {
		node int32
		d    time.Duration
	}
	var offs []offset
	var slack time.Duration
	for _, a := range up {
		// The node stamped its answer when it had done its checks; the
		// answer then travelled for at most the round trip less the
		// node's own time.
		took := time.Duration(a.health.TookSeconds * float64(time.Second))
		rtt := max(a.at.Sub(a.sent)-took, 0)
		offs = append(offs, offset{a.health.NodeID, a.health.Time.Sub(a.at.Add(-rtt / 2))})
		slack = max(slack, rtt/2)
	}
	slices.SortFunc(offs, func(a, b offset) int { return int(a.d - b.d) })
	lo, hi := offs[0], offs[len(offs)-1]
	skew := hi.d - lo.d
	if skew > lim.clockSkew+2*slack {
		add(sevWarning, "clock", fmt.Sprintf("nodes %d and %d", lo.node, hi.node),
			"clocks %s apart (measured within %s): time-based retention and timestamps disagree between nodes", skew.Round(time.Millisecond), (2 * slack).Round(time.Millisecond))
		return
	}
	add(sevOK, "clock", fmt.Sprintf("%d nodes", len(up)), "clocks within %s of each other", (skew + 2*slack).Round(time.Millisecond))
}

// doctorCluster checks the brokers and partitions through the Kafka
// protocol.
func doctorCluster(ctx context.Context, add addFinding, up []nodeAnswer, g *cliGlobals, explicit bool, lim doctorLimits) {
	if !explicit {
		var boot []string
		for _, a := range up {
			if a.health.KafkaAddress != "" {
				boot = append(boot, a.health.KafkaAddress)
			}
		}
		if len(boot) == 0 {
			add(sevError, "partitions", "cluster", "no node answered with its Kafka address; give --bootstrap")
			return
		}
		g.bootstrap = strings.Join(boot, ",")
	}
	a, actx, done, err := g.admin(ctx)
	if err != nil {
		add(sevError, "partitions", "cluster", "cannot reach the cluster at %s: %v", g.bootstrap, err)
		return
	}
	defer done()
	info, err := a.DescribeCluster(actx)
	if err != nil {
		add(sevError, "partitions", "cluster", "metadata from %s: %v", g.bootstrap, err)
		return
	}
	registered, err := a.ListBrokers(actx)
	if err != nil {
		add(sevWarning, "nodes", "cluster", "listing the registered brokers: %v", err)
	}
	for _, b := range registered {
		if b.Fenced {
			add(sevError, "nodes", fmt.Sprintf("node %d", b.NodeID), "registered but fenced: the node is down or cut from NATS")
		}
	}
	live := map[int32]bool{}
	for _, b := range info.Brokers {
		live[b.NodeID] = true
	}
	if info.Controller < 0 {
		add(sevError, "nodes", "controller", "no active controller")
	}
	offline, under := map[string]int{}, map[string]int{}
	notLive := map[int32]int{}
	leaders, replicas := map[int32]int{}, map[int32]int{}
	partitions := 0
	for _, t := range info.Topics {
		for _, p := range t.Partitions {
			partitions++
			if p.Leader < 0 {
				offline[t.Name]++
			} else {
				leaders[p.Leader]++
			}
			if len(p.ISR) < len(p.Replicas) {
				under[t.Name]++
			}
			for _, r := range p.Replicas {
				replicas[r]++
				if !live[r] {
					notLive[r]++
				}
			}
		}
	}
	for _, topic := range slices.Sorted(maps.Keys(offline)) {
		add(sevError, "partitions", topic, "%d partitions without a leader", offline[topic])
	}
	for _, topic := range slices.Sorted(maps.Keys(under)) {
		add(sevWarning, "partitions", topic, "%d partitions under-replicated (ISR smaller than the replicas)", under[topic])
	}
	for _, id := range slices.Sorted(maps.Keys(notLive)) {
		add(sevError, "nodes", fmt.Sprintf("node %d", id), "assigned %d replicas but not live", notLive[id])
	}
	if len(offline) == 0 && len(under) == 0 {
		add(sevOK, "partitions", "cluster", "%d partitions on %d live brokers, every one led and fully in sync", partitions, len(info.Brokers))
	}
	doctorSkew(add, "leaders", leaders, info.Brokers, lim)
	doctorSkew(add, "replicas", replicas, info.Brokers, lim)
}

// doctorSkew warns when a live broker holds many more (or fewer) leaders
// or replicas than the mean.
func doctorSkew(add addFinding, what string, count map[int32]int, brokers []sdk.BrokerInfo, lim doctorLimits) {
	if len(brokers) < 2 {
		return
	}
	total := 0
	for _, b := range brokers {
		total += count[b.NodeID]
	}
	mean := float64(total) / float64(len(brokers))
	var hot, cold []string
	for _, b := range brokers {
		c := float64(count[b.NodeID])
		switch {
		case c > mean*(1+lim.skewTolerance)+1:
			hot = append(hot, fmt.Sprintf("node %d: %d", b.NodeID, count[b.NodeID]))
		case c < mean*(1-lim.skewTolerance)-1:
			cold = append(cold, fmt.Sprintf("node %d: %d", b.NodeID, count[b.NodeID]))
		}
	}
	if len(hot)+len(cold) > 0 {
		add(sevWarning, "balance", what, "skewed around a mean of %.1f per broker: %s (shale cluster rebalance --dry-run shows a plan)",
			mean, strings.Join(append(hot, cold...), ", "))
		return
	}
	add(sevOK, "balance", what, "%.1f per broker on average, none beyond %.0f%%", mean, lim.skewTolerance*100)
}
