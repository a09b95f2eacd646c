package replica

import (
	"slices"
	"time"

	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// StepDownSilent is the node's answer to a registration that has not
// been renewed for longer than its session (broker.sessionLoop): it steps
// every leader replica down (until Resume) once the control plane has
// evidently moved on without this node, and reports whether it did.
//
// The node's own clock cannot tell a control plane that is down for every
// node (nobody can elect another leader; the leaders must keep serving)
// from one that is down for this node alone (the controller fences it and
// elects others when its session expires). Its followers can: a replica
// that the controller could elect instead of this one (an ISR member, or
// any replica when unclean.leader.election.enable is set) fetches from
// this leader while it takes this node for leader, and stops once it
// follows a newer epoch. So the evidence is a leader replica all of whose
// electable followers have been silent for quiet (no fetch since
// now-quiet); a replica without any electable follower cannot be
// replaced and is no evidence. Once there is evidence, every leader
// replica with an electable follower steps down: the controller elects
// away from a fenced broker in one pass.
func (r *Manager) StepDownSilent(now time.Time, quiet time.Duration) bool {
	r.mu.Lock()
	reps := make([]*partition.Replica, 0, len(r.mu.replicas))
	for _, rep := range r.mu.replicas {
		reps = append(reps, rep)
	}
	down := r.mu.steppedDown
	r.mu.Unlock()
	var replaceable []*partition.Replica
	evidence := down
	for _, rep := range reps {
		electable, silent := followersSilent(rep.Status(), rep.Config().Bool(config.UncleanLeaderElection), now, quiet)
		if electable {
			replaceable = append(replaceable, rep)
			evidence = evidence || silent
		}
	}
	if !evidence {
		return false
	}
	r.mu.Lock()
	r.mu.steppedDown = true
	r.mu.Unlock()
	for _, rep := range replaceable {
		if rep.IsLeader() {
			rep.SetLeadership(false, rep.LeaderEpoch())
			r.logger.Warn("stepped down: control plane unreachable", "topic", rep.Topic(), "partition", rep.Partition(),
				"reason", "session expired and the electable followers stopped fetching")
			if r.onLeadership != nil {
				r.onLeadership(rep.Topic(), rep.Partition())
			}
		}
	}
	return true
}

// followersSilent decides from a replica's status whether, as a leader,
// it could be replaced (electable: it has a follower the controller could
// elect instead: another ISR member, or with unclean any other replica)
// and whether every such follower has been silent for quiet at now (no
// fetch since now-quiet; one never heard from since this replica became
// leader counts from then). A follower is false, false.
func followersSilent(st partition.Status, unclean bool, now time.Time, quiet time.Duration) (electable, silent bool) {
	if !st.Leader {
		return false, false
	}
	n, quietN := 0, 0
	for _, f := range st.Followers {
		if !unclean && !slices.Contains(st.ISR, f.ID) {
			continue
		}
		n++
		last := f.LastFetch
		if !f.Heard {
			last = st.LeaderSince
		}
		if now.Sub(last) > quiet {
			quietN++
		}
	}
	return n > 0, n > 0 && quietN == n
}
