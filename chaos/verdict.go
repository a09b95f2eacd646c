package chaos

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Verdict is a run's outcome: what ran, what the workload did, what the
// checker found.
type Verdict struct {
	Schedule string        `json:"schedule"`
	Seed     int64         `json:"seed"`
	Duration time.Duration `json:"duration"` // the fault phase
	Wall     time.Duration `json:"wall"`     // the whole run
	Nodes    int           `json:"nodes"`
	NATS     int           `json:"nats_servers"`
	NetOK    bool          `json:"network_faults"` // iptables partitions available

	Acked int `json:"acked"`
	// LeaderAcksLost: records acknowledged with acks=1 and not in the final
	// read (allowed by acks=1; not a violation).
	LeaderAcksLost int `json:"leader_acks_lost"`
	Failed         int `json:"produce_errors"`
	Reads          int `json:"reads"`
	FinalReads     int `json:"final_records"`
	Commits        int `json:"commit_observations"`
	Trims          int `json:"trims"` // acknowledged DeleteRecords
	// GroupCommits: acknowledged commits per group; GroupResumes: how many
	// times a member of each group started reading a partition (a new
	// member, or a partition handed to another member).
	GroupCommits map[string]int `json:"group_commits"`
	GroupResumes map[string]int `json:"group_resumes"`
	// ShareDeliveries and ShareConfirmed: records the share group's members
	// got, and acceptances the broker confirmed (0 without the workload).
	ShareDeliveries int `json:"share_deliveries"`
	ShareConfirmed  int `json:"share_confirmed"`

	Counts     map[Kind]int `json:"counts"`
	Total      int          `json:"violations_total"`
	Violations []Violation  `json:"violations"`

	Faults      int            `json:"faults"`
	FaultKinds  map[string]int `json:"fault_kinds"`
	FaultErrors int            `json:"fault_errors"`
	RecoveryP50 time.Duration  `json:"recovery_p50"`
	RecoveryP99 time.Duration  `json:"recovery_p99"`
	AckP50      time.Duration  `json:"ack_latency_p50"`
	AckP99      time.Duration  `json:"ack_latency_p99"`

	Windows []FaultWindow `json:"windows"`
	Plan    []Event       `json:"plan"`
}

func newVerdict(cfg *Config, s Schedule, h *History, res Result, ws []FaultWindow, rec *recorder, plan []Event, c *Cluster) *Verdict {
	v := &Verdict{Schedule: s.Name, Seed: cfg.Seed, Duration: cfg.Duration, Wall: rec.since(), Nodes: len(c.Nodes), NATS: len(c.nats), NetOK: c.net.ok,
		Acked: len(h.Acks), LeaderAcksLost: res.LeaderAcksLost, Reads: len(h.Reads), Commits: len(h.Commit), Trims: len(h.Trims),
		Counts: res.Counts, Total: res.Total(), Violations: res.Violations,
		Faults: len(ws), FaultKinds: map[string]int{}, Windows: ws, Plan: plan,
		GroupCommits: map[string]int{}, GroupResumes: map[string]int{}}
	for _, c := range h.Commit {
		switch c.Source {
		case "commit":
			v.GroupCommits[c.Group]++
		case "resume":
			v.GroupResumes[c.Group]++
		}
	}
	for _, f := range h.Final {
		v.FinalReads += len(f.Records)
	}
	if h.Share != nil {
		v.ShareDeliveries = len(h.Share.Deliveries)
		for _, a := range h.Share.Accepts {
			if a.Confirmed {
				v.ShareConfirmed++
			}
		}
	}
	rec.mu.Lock()
	for _, e := range rec.errorsPerSec {
		v.Failed += e
	}
	rec.mu.Unlock()
	var recs []time.Duration
	for _, w := range ws {
		v.FaultKinds[string(w.Kind)]++
		if w.Err != "" {
			v.FaultErrors++
		}
		if w.Recovery >= 0 && w.Kind.track() == "node" {
			recs = append(recs, w.Recovery)
		}
	}
	v.RecoveryP50, v.RecoveryP99 = quantile(recs, 0.5), quantile(recs, 0.99)
	var lat []time.Duration // acks=all only, comparable across runs
	for _, a := range h.Acks {
		if !slices.Contains(h.LeaderAcks, a.Topic) {
			lat = append(lat, a.Latency)
		}
	}
	v.AckP50, v.AckP99 = quantile(lat, 0.5), quantile(lat, 0.99)
	return v
}

// quantile is the q-quantile of ds (nearest rank), 0 for none.
func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(q*float64(len(s))+0.999999) - 1
	return s[max(0, min(i, len(s)-1))]
}

// Summary is the verdict's one line.
func (v *Verdict) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "schedule=%s seed=%d duration=%v acked=%d", v.Schedule, v.Seed, v.Duration, v.Acked)
	for _, k := range Kinds {
		fmt.Fprintf(&b, " %s=%d", strings.ToLower(strings.ReplaceAll(string(k), "-", "_")), v.Counts[k])
	}
	fmt.Fprintf(&b, " acks1_lost=%d faults=%d recovery_p99=%v ack_p99=%v wall=%v", v.LeaderAcksLost, v.Faults, v.RecoveryP99.Round(time.Millisecond), v.AckP99.Round(time.Millisecond), v.Wall.Round(time.Second))
	if v.Total == 0 {
		b.WriteString(" verdict=PASS")
	} else {
		b.WriteString(" verdict=FAIL")
	}
	return b.String()
}

// write puts verdict.json, history.json and timeline.svg in dir.
func (v *Verdict) write(dir string, h *History, rec *recorder) error {
	vb, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "verdict.json"), vb, 0o644); err != nil {
		return err
	}
	hb, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "history.json"), hb, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "timeline.svg"), timelineSVG(v, rec), 0o644)
}
