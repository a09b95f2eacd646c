package main

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/shale-io/shale/adminapi"
)

// describeShareGroup describes a KIP-932 share group for `shale group
// describe`: members with their epochs and assignments
// (ShareGroupDescribe) and, per share-partition, the share-partition
// start offset as CURRENT-OFFSET and the records not yet acknowledged or
// archived as LAG (DescribeShareGroupOffsets); addInFlight adds the
// in-flight counts. ok is false when name is no share group.
func describeShareGroup(ctx context.Context, adm *kadm.Client, name string) (d groupDescription, ok bool, err error) {
	dgs, err := adm.DescribeShareGroups(ctx, name)
	if err != nil && !errors.Is(err, kerr.GroupIDNotFound) {
		var se *kadm.ShardErrors
		if !errors.As(err, &se) {
			return d, false, err
		}
	}
	dg, found := dgs[name]
	if !found || errors.Is(dg.Err, kerr.GroupIDNotFound) {
		return d, false, nil
	}
	if dg.Err != nil {
		return d, false, dg.Err
	}
	d = groupDescription{Group: name, GroupProtocol: "share", GroupEpoch: dg.GroupEpoch, AssignmentEpoch: dg.AssignmentEpoch,
		State: dg.GroupState, ProtocolType: "share", Protocol: dg.Assignor, Coordinator: dg.Coordinator.NodeID,
		Members: []groupMember{}, Partitions: []partitionLag{}}
	for _, m := range dg.Members {
		epoch := m.MemberEpoch
		gm := groupMember{MemberID: m.MemberID, ClientID: m.ClientID, Host: m.ClientHost, MemberEpoch: &epoch, Assigned: map[string][]int32{}}
		for t, ps := range m.Assignment {
			gm.Assigned[t] = slices.Sorted(func(yield func(int32) bool) {
				for p := range ps {
					if !yield(p) {
						return
					}
				}
			})
		}
		d.Members = append(d.Members, gm)
	}
	offs, err := adm.DescribeShareGroupOffsets(ctx, name)
	if err != nil {
		d.Error = err.Error()
		return d, true, nil
	}
	o := offs[name]
	if o.Err != nil {
		d.Error = o.Err.Error()
		return d, true, nil
	}
	var topics []string
	for t := range o.Offsets {
		topics = append(topics, t)
	}
	ends, _ := adm.ListEndOffsets(ctx, topics...)
	for _, t := range slices.Sorted(slices.Values(topics)) {
		ps := o.Offsets[t]
		for _, p := range slices.Sorted(func(yield func(int32) bool) {
			for p := range ps {
				if !yield(p) {
					return
				}
			}
		}) {
			so := ps[p]
			pl := partitionLag{Topic: t, Partition: p, CurrentOffset: so.StartOffset, LogEndOffset: -1, Lag: so.Lag}
			if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
				pl.LogEndOffset = e.Offset
			}
			if so.Err != nil {
				pl.Error = so.Err.Error()
			}
			if pl.Lag > 0 {
				d.TotalLag += pl.Lag
			}
			d.Partitions = append(d.Partitions, pl)
		}
	}
	return d, true, nil
}

// addInFlight fills in a share group's in-flight counts per partition
// from the admin HTTP API of the nodes behind --admin, each answering for
// the share-partitions it leads and holds in memory
// (adminapi.SharePartitionsPath). A node that does not answer is skipped;
// when none does, d.InFlightError says why and the counts stay unknown.
// Only bad --admin-* flags are an error.
func addInFlight(ctx context.Context, admin *adminAddrs, timeout time.Duration, d *groupDescription) error {
	if len(d.Partitions) == 0 {
		return nil
	}
	client, addrs, err := admin.client(min(timeout, 5*time.Second))
	if err != nil {
		return err
	}
	type tp struct {
		topic string
		p     int32
	}
	got := map[tp]adminapi.SharePartition{}
	var errs []string
	answered := 0
	for _, addr := range addrs {
		sp, err := client.SharePartitions(ctx, addr, d.Group)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		answered++
		for _, p := range sp.Partitions {
			got[tp{p.Topic, p.Partition}] = p
		}
	}
	if answered == 0 {
		d.InFlightError = strings.Join(errs, "; ")
		return nil
	}
	for i := range d.Partitions {
		pl := &d.Partitions[i]
		if p, ok := got[tp{pl.Topic, pl.Partition}]; ok {
			pl.InFlight, pl.Acquired, pl.Available = &p.InFlight, &p.Acquired, &p.Available
		}
	}
	return nil
}
