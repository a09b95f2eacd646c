package sdk

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// LeaderElection is one partition's outcome of ElectPreferredLeaders.
type LeaderElection struct {
	Topic     string
	Partition int32
	// Err is nil when leadership moved to the preferred replica;
	// kerr.ElectionNotNeeded when the preferred replica already leads;
	// otherwise why it could not (kerr.PreferredLeaderNotAvailable: the
	// preferred replica is not live or not in the ISR).
	Err error
}

// ElectPreferredLeaders moves leadership of every partition of topics (all
// topics when none is named) to its preferred replica, the first assigned,
// with Kafka's ElectLeaders PREFERRED (what kafka-leader-election
// --election-type PREFERRED sends). The error is for the request as a
// whole (an unknown topic, an unreachable cluster); per-partition
// outcomes are in the results, sorted by topic and partition.
func (a *Admin) ElectPreferredLeaders(ctx context.Context, topics ...string) ([]LeaderElection, error) {
	return a.electLeaders(ctx, kadm.ElectPreferredReplica, "elect preferred leaders", topics)
}

// ElectUncleanLeaders elects a leader for every partition of topics (all
// topics when none is named) that has none, with Kafka's ElectLeaders
// UNCLEAN (kafka-leader-election --election-type UNCLEAN): a live replica
// out of the ISR may lead, and what only the lost ISR held is lost. A
// partition that has a leader reports kerr.ElectionNotNeeded. Results and
// errors are as ElectPreferredLeaders'.
func (a *Admin) ElectUncleanLeaders(ctx context.Context, topics ...string) ([]LeaderElection, error) {
	return a.electLeaders(ctx, kadm.ElectLiveReplica, "elect unclean leaders", topics)
}

func (a *Admin) electLeaders(ctx context.Context, how kadm.ElectLeadersHow, what string, topics []string) ([]LeaderElection, error) {
	if a.closed.Load() {
		return nil, ErrClosed
	}
	var set kadm.TopicsSet
	if len(topics) > 0 {
		td, err := a.adm.ListTopics(ctx, topics...)
		if err != nil {
			return nil, fmt.Errorf("sdk: %s: %w", what, err)
		}
		set = kadm.TopicsSet{}
		for _, t := range topics {
			d, ok := td[t]
			if !ok {
				return nil, topicErr(t, kerr.UnknownTopicOrPartition)
			}
			if d.Err != nil {
				return nil, topicErr(t, d.Err)
			}
			for p := range d.Partitions {
				set.Add(t, p)
			}
		}
	}
	res, err := a.adm.ElectLeaders(ctx, how, set)
	if err != nil {
		return nil, fmt.Errorf("sdk: %s: %w", what, err)
	}
	var out []LeaderElection
	for t, ps := range res {
		for p, r := range ps {
			e := LeaderElection{Topic: t, Partition: p, Err: r.Err}
			if r.Err != nil && r.ErrMessage != "" && !errors.Is(r.Err, kerr.ElectionNotNeeded) {
				e.Err = fmt.Errorf("%w: %s", r.Err, r.ErrMessage)
			}
			out = append(out, e)
		}
	}
	slices.SortFunc(out, func(x, y LeaderElection) int {
		return cmp.Or(cmp.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
	})
	return out, nil
}
