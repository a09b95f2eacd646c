package broker

// The console's groups (adminapi.ConsoleGroupsPath, ConsoleGroupPath):
// every group of the cluster, whichever node coordinates it, consumer and
// share groups alike. Groups live on their coordinators, so, unlike the
// other console endpoints, these ask the cluster over Kafka, as the CLI's
// `shale group list` and `describe` do: ListGroups of every broker, then
// for the groups of one page only their members and offsets
// (kadm.Lag: DescribeGroups, OffsetFetch, ListOffsets; for share groups
// ShareGroupDescribe, DescribeShareGroupOffsets, ListOffsets). The node
// asks as a client of its own inter-broker listener with its inter-broker
// identity (consoleAdmin), as the actions do. A page costs a ListGroups
// per broker and a describe of at most limit groups; the lag over time is
// the coordinator's own samples, answered by the coordinator only.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/sdk"
	"github.com/shale-io/shale/share"
)

// mountConsoleGroups mounts the groups' endpoints.
func (n *Node) mountConsoleGroups(mux *http.ServeMux) {
	mux.HandleFunc(adminapi.ConsoleGroupsPath, n.consoleGET(n.consoleGroups))
	mux.HandleFunc(adminapi.ConsoleGroupPath, n.consoleGET(n.consoleGroup))
}

// listGroups is every group the brokers list, sorted by name, and the
// brokers whose ListGroups failed.
func listGroups(ctx context.Context, a *sdk.Admin) ([]kadm.ListedGroup, []string, error) {
	listed, err := a.Kadm().ListGroups(ctx)
	failed, err := partialFailures(err)
	if err != nil {
		return nil, nil, err
	}
	return listed.Sorted(), failed, nil
}

// partialFailures splits the error of a request kadm sends to every
// broker: when some brokers answered, the others' failures ("node N:
// error") and nil; else nil and err (nil, or the whole request's
// failure).
func partialFailures(err error) ([]string, error) {
	se := (*kadm.ShardErrors)(nil)
	if !errors.As(err, &se) || se.AllFailed {
		return nil, err
	}
	var failed []string
	for _, e := range se.Errs {
		failed = append(failed, fmt.Sprintf("node %d: %v", e.Broker.NodeID, e.Err))
	}
	return failed, nil
}

func (n *Node) consoleGroups(r *http.Request) (any, error) {
	limit, err := consoleLimit(r)
	if err != nil {
		return nil, err
	}
	cursor := r.URL.Query().Get("cursor")
	a, ctx, done, err := n.consoleAdmin(r.Context())
	if err != nil {
		return nil, err
	}
	defer done()
	all, failed, err := listGroups(ctx, a)
	if err != nil {
		return nil, err
	}
	out := adminapi.ConsoleGroups{NodeID: n.cfg.NodeID, Total: len(all), Groups: []adminapi.ConsoleGroup{}, ListErrors: failed}
	page, next := pageAfter(all, func(g kadm.ListedGroup) string { return g.Group }, cursor, limit) // all is sorted by name
	out.Next = next
	for _, d := range n.describeGroups(ctx, a, page) {
		out.Groups = append(out.Groups, d.line)
	}
	return out, nil
}

func (n *Node) consoleGroup(r *http.Request) (any, error) {
	name := r.URL.Query().Get("group")
	if name == "" {
		return nil, errConsoleRequest{"group is required"}
	}
	limit, err := consoleLimit(r)
	if err != nil {
		return nil, err
	}
	ct, cp, err := groupCursor(r.URL.Query().Get("cursor"))
	if err != nil {
		return nil, err
	}
	a, ctx, done, err := n.consoleAdmin(r.Context())
	if err != nil {
		return nil, err
	}
	defer done()
	all, _, err := listGroups(ctx, a)
	if err != nil {
		return nil, err
	}
	i := slices.IndexFunc(all, func(g kadm.ListedGroup) bool { return g.Group == name })
	if i < 0 {
		return nil, errConsoleNotFound{fmt.Sprintf("group %q not found (no broker lists it)", name)}
	}
	d := n.describeGroups(ctx, a, all[i:i+1])[0]
	out := adminapi.ConsoleGroupDetail{NodeID: n.cfg.NodeID, Group: d.line, Partitions: []adminapi.ConsoleGroupPartition{}, Topics: []string{}}
	for _, p := range d.partitions { // by topic and partition
		if n := len(out.Topics); n == 0 || out.Topics[n-1] != p.Topic {
			out.Topics = append(out.Topics, p.Topic)
		}
		if ct != "" && cmp.Or(strings.Compare(p.Topic, ct), cmp.Compare(p.Partition, cp)) <= 0 {
			continue
		}
		if len(out.Partitions) == limit {
			if out.Next == "" {
				last := out.Partitions[limit-1]
				out.Next = last.Topic + "/" + strconv.Itoa(int(last.Partition))
			}
			continue
		}
		out.Partitions = append(out.Partitions, p)
	}
	return out, nil
}

// groupCursor reads a group page's cursor, TOPIC/PARTITION ("" for the
// first page).
func groupCursor(s string) (string, int32, error) {
	if s == "" {
		return "", 0, nil
	}
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return "", 0, errConsoleRequest{fmt.Sprintf("cursor %q: want TOPIC/PARTITION", s)}
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, errConsoleRequest{fmt.Sprintf("cursor %q: want TOPIC/PARTITION", s)}
	}
	return s[:i], int32(p), nil
}

// topicPartition names a partition.
type topicPartition struct {
	topic     string
	partition int32
}

// describedGroup is one group's line and its partitions, sorted.
type describedGroup struct {
	line       adminapi.ConsoleGroup
	partitions []adminapi.ConsoleGroupPartition
}

// describeGroups describes listed (sorted by name) over Kafka: the share
// groups with ShareGroupDescribe and DescribeShareGroupOffsets, the others
// with kadm.Lag. A group that cannot be described keeps its listed state
// and says why in its Error.
func (n *Node) describeGroups(ctx context.Context, a *sdk.Admin, listed []kadm.ListedGroup) []describedGroup {
	out := make([]describedGroup, len(listed))
	var shares, others []string
	for i, g := range listed {
		typ := strings.ToLower(g.GroupType)
		if typ == "" {
			typ = "classic"
		}
		out[i].line = adminapi.ConsoleGroup{Group: g.Group, Type: typ, ProtocolType: g.ProtocolType, State: g.State,
			Coordinator: g.Coordinator, HistoryNode: -1}
		if typ == "share" {
			shares = append(shares, g.Group)
		} else {
			others = append(others, g.Group)
		}
	}
	byName := make(map[string]*describedGroup, len(out))
	for i := range out {
		byName[out[i].line.Group] = &out[i]
	}
	if len(others) > 0 {
		n.describeConsumerGroups(ctx, a, others, byName)
	}
	if len(shares) > 0 {
		n.describeShareGroups(ctx, a, shares, byName)
	}
	for i := range out {
		d := &out[i]
		slices.SortFunc(d.partitions, func(x, y adminapi.ConsoleGroupPartition) int {
			return cmp.Or(strings.Compare(x.Topic, y.Topic), cmp.Compare(x.Partition, y.Partition))
		})
		if d.partitions == nil {
			d.partitions = []adminapi.ConsoleGroupPartition{}
		}
		d.line.Partitions = len(d.partitions)
		for _, p := range d.partitions {
			if p.Lag < 0 {
				d.line.LagUnknown++
			} else {
				d.line.Lag += p.Lag
			}
		}
	}
	return out
}

// describeConsumerGroups fills in classic and consumer groups: members
// and lag from kadm.Lag, and where this node coordinates a group and
// samples it, the time lag of its last sample and its lag over time.
func (n *Node) describeConsumerGroups(ctx context.Context, a *sdk.Admin, names []string, byName map[string]*describedGroup) {
	lags, err := a.Kadm().Lag(ctx, names...)
	if err != nil && len(lags) == 0 {
		for _, g := range names {
			byName[g].line.Error = err.Error()
		}
		return
	}
	var sample adminapi.ConsumerLag
	if n.lag != nil {
		sample = n.lag.Latest()
	}
	for _, name := range names {
		d := byName[name]
		l, ok := lags[name]
		if !ok {
			d.line.Error = "not described"
			continue
		}
		if l.Coordinator.NodeID >= 0 && l.DescribeErr == nil {
			d.line.Coordinator = l.Coordinator.NodeID
		}
		if l.State != "" {
			d.line.State = l.State
		}
		d.line.Members = len(l.Members)
		if err := l.Error(); err != nil {
			d.line.Error = err.Error()
		}
		here := d.line.Coordinator == n.cfg.NodeID
		// The coordinator's sampler takes the groups of the consumer
		// protocol; this node knows whether its own samples.
		if (d.line.ProtocolType == "" || d.line.ProtocolType == "consumer") && (!here || n.lag != nil) {
			d.line.HistoryNode = d.line.Coordinator
		}
		if here && n.lag != nil {
			d.line.History = n.lag.History(name)
		}
		sampled := map[topicPartition]float64{}
		for _, g := range sample.Groups {
			if g.Group != name || !here {
				continue
			}
			for _, p := range g.Partitions {
				sampled[topicPartition{p.Topic, p.Partition}] = p.TimeLagSeconds
			}
		}
		for _, ml := range l.Lag.Sorted() {
			p := adminapi.ConsoleGroupPartition{Topic: ml.Topic, Partition: ml.Partition, Offset: ml.Commit.At, End: -1, Lag: -1, TimeLagSeconds: -1}
			if ml.End.Err == nil {
				p.End = ml.End.Offset
			}
			if ml.Err == nil {
				p.Lag = ml.Lag
			}
			if p.Offset < 0 {
				p.Offset = -1
			}
			if s, ok := sampled[topicPartition{ml.Topic, ml.Partition}]; ok {
				p.TimeLagSeconds = s
			}
			d.partitions = append(d.partitions, p)
		}
	}
}

// describeShareGroups fills in share groups: members from
// ShareGroupDescribe, per share-partition its start offset and lag from
// DescribeShareGroupOffsets (the lag known where the coordinator leads
// the partition), the lag and in-flight records of the share-partitions
// this node leads, and the partitions' high watermarks.
func (n *Node) describeShareGroups(ctx context.Context, a *sdk.Admin, names []string, byName map[string]*describedGroup) {
	adm := a.Kadm()
	described, err := adm.DescribeShareGroups(ctx, names...)
	if err != nil && len(described) == 0 {
		for _, g := range names {
			byName[g].line.Error = err.Error()
		}
		return
	}
	offsets, oerr := adm.DescribeShareGroupOffsets(ctx, names...)
	var topics []string
	for _, o := range offsets {
		for t := range o.Offsets {
			if !slices.Contains(topics, t) {
				topics = append(topics, t)
			}
		}
	}
	var ends kadm.ListedOffsets
	if len(topics) > 0 {
		ends, _ = adm.ListEndOffsets(ctx, topics...) // a partition without an answer shows no end
	}
	for _, name := range names {
		d := byName[name]
		if dg, ok := described[name]; !ok {
			d.line.Error = "not described"
		} else if dg.Err != nil {
			d.line.Error = dg.Err.Error()
		} else {
			d.line.State, d.line.Members, d.line.Coordinator = dg.GroupState, len(dg.Members), dg.Coordinator.NodeID
		}
		// The coordinator's sampler takes share groups too.
		if here := d.line.Coordinator == n.cfg.NodeID; d.line.Coordinator >= 0 && (!here || n.lag != nil) {
			d.line.HistoryNode = d.line.Coordinator
			if here {
				d.line.History = n.lag.History(name)
			}
		}
		o, ok := offsets[name]
		switch {
		case !ok && oerr != nil:
			d.line.Error = cmp.Or(d.line.Error, oerr.Error())
			continue
		case !ok:
			continue
		case o.Err != nil:
			d.line.Error = cmp.Or(d.line.Error, o.Err.Error())
			continue
		}
		local := map[topicPartition]share.PartitionLag{} // the share-partitions this node leads
		if n.share != nil {
			for _, pl := range n.share.parts.Lag(name) {
				local[topicPartition{pl.Topic, pl.Partition}] = pl
			}
		}
		for t, ps := range o.Offsets {
			for p, so := range ps {
				gp := adminapi.ConsoleGroupPartition{Topic: t, Partition: p, Offset: so.StartOffset, End: -1, Lag: so.Lag, TimeLagSeconds: -1}
				if so.Err != nil {
					gp.Lag = -1
				}
				if gp.Offset < 0 {
					gp.Offset = -1
				}
				if e, ok := ends.Lookup(t, p); ok && e.Err == nil {
					gp.End = e.Offset
				}
				if sp, ok := local[topicPartition{t, p}]; ok {
					if gp.Lag < 0 {
						gp.Lag = sp.Lag
					}
					gp.InFlight, gp.Acquired, gp.Available = &sp.InFlight, &sp.Acquired, &sp.Available
				}
				d.partitions = append(d.partitions, gp)
			}
		}
	}
}
