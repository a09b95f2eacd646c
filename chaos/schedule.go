package chaos

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"time"
)

// FaultKind is one kind of fault.
type FaultKind string

// The faults. Node faults take one node out (at most one at a time); infra
// faults hit S3 or NATS; ops are admin requests.
const (
	Kill            FaultKind = "kill"             // kill -9 a node, restart it after the window
	KillCoordinator FaultKind = "kill-coordinator" // kill -9 the node leading the group's __consumer_offsets partition
	WipeCoordinator FaultKind = "wipe-coordinator" // kill -9 the group coordinator's node, delete its data dir, restart it
	// KillTxnCoordinator: kill -9 the node leading the transactional
	// pipeline's __transaction_state partition (its transaction
	// coordinator); needs Config.Transactions.
	KillTxnCoordinator FaultKind = "kill-txn-coordinator"
	Pause              FaultKind = "pause"          // SIGSTOP a node (all threads stopped), SIGCONT after the window
	Wipe               FaultKind = "wipe"           // kill -9 a node, delete its data dir, restart it (node replacement)
	WipeLastISR        FaultKind = "wipe-last-isr"  // kill a partition's followers, then its leader; wipe the leader; start the followers, then it
	Rolling            FaultKind = "rolling"        // SIGTERM and restart every node in turn
	PartNode           FaultKind = "partition-node" // drop packets between a node and its peers (iptables)
	PartNATS           FaultKind = "partition-nats" // drop packets between a node and NATS (iptables)
	PartS3             FaultKind = "partition-s3"   // drop packets between a node and S3 (iptables)
	S3Errors           FaultKind = "s3-errors"      // the S3 fault proxy answers 30% of requests 500/503
	S3Latency          FaultKind = "s3-latency"     // the S3 fault proxy adds 300 ms to every request
	S3Pause            FaultKind = "s3-pause"       // SIGSTOP the S3 server
	NATSKill           FaultKind = "nats-kill"      // kill -9 a NATS server, restart it after the window
	NATSPause          FaultKind = "nats-pause"     // SIGSTOP every NATS server
	Reassign           FaultKind = "reassign"       // AlterPartitionReassignments of a partition, and back at the window's end
	Elect              FaultKind = "elect"          // ElectLeaders PREFERRED on every partition
	// Decommission: shale broker decommission of a node (the controller's
	// balancer moves its leaderships, then its replicas, away), and
	// recommission at the window's end (the balancer moves its share back).
	Decommission FaultKind = "decommission"
	// The bucket ops (issue 29; bucket.go), each killing the node that
	// serves its request every other time: Restore deletes the
	// restore topic and restores it from the bucket; Fork forks the tiered
	// topic at an offset or a time; QuarantineRestore has retention delete
	// a topic's segments into the quarantine and restores them;
	// QuarantinePurge purges them instead.
	Restore           FaultKind = "restore"
	Fork              FaultKind = "fork"
	QuarantineRestore FaultKind = "quarantine-restore"
	QuarantinePurge   FaultKind = "quarantine-purge"
)

func (k FaultKind) track() string {
	switch k {
	case Kill, KillCoordinator, WipeCoordinator, KillTxnCoordinator, Pause, Wipe, WipeLastISR, Rolling, PartNode, PartNATS, PartS3:
		return "node"
	case Reassign, Elect, Decommission, Restore, Fork, QuarantineRestore, QuarantinePurge:
		return "ops"
	}
	return "infra"
}

// bucket reports a bucket op (bucket.go).
func (k FaultKind) bucket() bool {
	return k == Restore || k == Fork || k == QuarantineRestore || k == QuarantinePurge
}

// Schedule is a named mix of faults.
type Schedule struct {
	Name  string
	About string
	Kinds []FaultKind
	// Nodes is the cluster size it needs (3 unless it moves replicas to a
	// node outside the replica set).
	Nodes int
	// NATSCluster runs three NATS servers instead of one.
	NATSCluster bool
	// Transactions runs the transactional pipeline (Config.Transactions).
	Transactions bool
	// ShareGroups runs the share group workload (Config.ShareGroups).
	ShareGroups bool
	// TierOps sets up the bucket ops' topics (bucket.go); the schedules
	// with a bucket op set it.
	TierOps bool
	// NoLoss: the schedule promises no acknowledged record lost (RF=3,
	// min.insync.replicas=2, at most one node down at a time).
	NoLoss bool
	// Window bounds each fault's duration.
	MinWindow, MaxWindow time.Duration
}

// Schedules are the named schedules; docs/reliability.md describes each.
var Schedules = []Schedule{
	{Name: "smoke", About: "make test's schedule: kills, pauses, a rolling restart, S3 errors, latency and pauses, preferred elections; only faults whose safety holds on main",
		Kinds: []FaultKind{Kill, Pause, Rolling, S3Errors, S3Latency, S3Pause, Elect}, Nodes: 3, NoLoss: true, ShareGroups: true},
	{Name: "kills", About: "kill -9 and SIGSTOP of single nodes", Kinds: []FaultKind{Kill, Pause}, Nodes: 3, NoLoss: true},
	{Name: "wipe", About: "node replacement: kill -9, data dir deleted, restart; and kills", Kinds: []FaultKind{Wipe, Kill}, Nodes: 3, NoLoss: true},
	{Name: "wipe-last-isr", About: "node replacement of a partition's last ISR member (every node down for a moment; issue 15 item 2)", Kinds: []FaultKind{WipeLastISR}, Nodes: 3, NoLoss: true},
	{Name: "reassign", About: "partition reassignments to a fourth node and back, preferred elections, kills", Kinds: []FaultKind{Reassign, Elect, Kill}, Nodes: 4, NoLoss: true},
	{Name: "coordinator", About: "kill -9 of the group coordinator's node, and its replacement (data dir wiped), under the consumer and share group workloads", Kinds: []FaultKind{KillCoordinator, WipeCoordinator}, Nodes: 3, NoLoss: true, ShareGroups: true},
	{Name: "tiered", About: "S3 outages (paused server, 5xx, latency, a node cut from S3) and kills under the tiered workload", Kinds: []FaultKind{S3Pause, S3Errors, S3Latency, PartS3, Kill}, Nodes: 3, NoLoss: true},
	{Name: "nats", About: "a 3-server NATS cluster: a NATS server killed, all paused, a node cut from NATS", Kinds: []FaultKind{NATSKill, NATSPause, PartNATS}, Nodes: 3, NATSCluster: true, NoLoss: true},
	{Name: "network", About: "network partitions: a node cut from its peers, from NATS, from S3 (iptables)", Kinds: []FaultKind{PartNode, PartNATS, PartS3}, Nodes: 3, NoLoss: true},
	{Name: "transactions", About: "the transactional read-process-write pipeline under kill -9 of its transaction coordinator, of the group coordinator, of any node, and preferred elections",
		Kinds: []FaultKind{KillTxnCoordinator, KillCoordinator, Kill, Elect}, Nodes: 3, NoLoss: true, Transactions: true},
	{Name: "elastic", About: "an elastic cluster: a node drained (decommission) and taken back (recommission), so the balancer moves replicas away and back; reassignments, preferred elections; kills, node replacement (an empty disk joining) and rolling restarts",
		Kinds: []FaultKind{Decommission, Reassign, Elect, Kill, Wipe, Rolling}, Nodes: 4, NoLoss: true, MinWindow: 5 * time.Second, MaxWindow: 15 * time.Second},
	{Name: "bucket", About: "the bucket as the backup: a topic deleted and restored from the bucket, point-in-time forks, retention deletes restored from the quarantine or purged, every other op of each kind killing the node serving it, beside kills of any node",
		Kinds: []FaultKind{Restore, Fork, QuarantineRestore, QuarantinePurge, Kill}, Nodes: 3, NoLoss: true, TierOps: true, MinWindow: 2 * time.Second, MaxWindow: 5 * time.Second},
	{Name: "mixed", About: "everything at once, within the limits: one node fault, one infra fault and one admin op at a time", Kinds: []FaultKind{Kill, Pause, Wipe, Rolling, PartNode, PartNATS, S3Errors, S3Latency, S3Pause, NATSKill, Reassign, Elect, KillCoordinator}, Nodes: 3, NoLoss: true},
}

// ScheduleNamed finds a schedule.
func ScheduleNamed(name string) (Schedule, error) {
	for _, s := range Schedules {
		if s.Name == name {
			return s, nil
		}
	}
	var names []string
	for _, s := range Schedules {
		names = append(names, s.Name)
	}
	return Schedule{}, fmt.Errorf("no schedule %q (have %s)", name, strings.Join(names, ", "))
}

// Event is one planned fault: not before At (since the fault phase began),
// lasting For.
type Event struct {
	At   time.Duration `json:"at"`
	For  time.Duration `json:"for"`
	Kind FaultKind     `json:"kind"`
	// Pick chooses the target (a node, a partition) when the event runs,
	// from what is then live: index = Pick mod candidates.
	Pick int `json:"pick"`
}

// Plan is the schedule's events for a seed over d: three tracks (node,
// infra, ops), each sequential, so that at most one node fault, one infra
// fault and one admin op are active at a time. The same seed gives the
// same plan. Each track draws its kinds from a shuffled bag, so every kind
// runs once before any runs twice.
func (s Schedule) Plan(seed int64, d time.Duration, netOK bool) []Event {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x5ca1ab1e))
	minW, maxW := s.MinWindow, s.MaxWindow
	if minW == 0 {
		minW, maxW = 2*time.Second, 8*time.Second
	}
	tracks := map[string][]FaultKind{}
	for _, k := range s.Kinds {
		if !netOK && (k == PartNode || k == PartNATS || k == PartS3) {
			continue
		}
		tracks[k.track()] = append(tracks[k.track()], k)
	}
	var out []Event
	for _, name := range []string{"node", "infra", "ops"} {
		kinds := tracks[name]
		if len(kinds) == 0 {
			continue
		}
		t := time.Duration(rng.Int64N(int64(3 * time.Second)))
		var bag []FaultKind // every kind once, shuffled, before any repeats
		for t < d {
			if len(bag) == 0 {
				bag = slices.Clone(kinds)
				rng.Shuffle(len(bag), func(i, j int) { bag[i], bag[j] = bag[j], bag[i] })
			}
			k := bag[0]
			bag = bag[1:]
			w := minW + time.Duration(rng.Int64N(int64(maxW-minW)))
			if t+w > d {
				break
			}
			out = append(out, Event{At: t, For: w, Kind: k, Pick: rng.IntN(1 << 20)})
			t += w + time.Second + time.Duration(rng.Int64N(int64(4*time.Second)))
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// kindsIn lists the distinct kinds of a plan.
func kindsIn(evs []Event) []string {
	var ks []string
	for _, e := range evs {
		if !slices.Contains(ks, string(e.Kind)) {
			ks = append(ks, string(e.Kind))
		}
	}
	sort.Strings(ks)
	return ks
}
