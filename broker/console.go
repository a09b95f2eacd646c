package broker

// The web console's JSON endpoints (adminapi.Console*Path; package console
// serves the pages). Each answers from the node's control-plane cache
// (controlplane.Store) and its local replicas, and asks no other node: a
// page load costs one in-memory pass over the metadata, and the lists are
// paged so that none grows with the cluster.

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/console"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/partition"
)

// mountConsole mounts the console's pages (console.Handler, under
// console.Prefix, with "/" redirected there) and its JSON endpoints.
func (n *Node) mountConsole(mux *http.ServeMux) {
	mux.Handle(console.Prefix, console.Handler())
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, console.Prefix, http.StatusFound)
	})
	mux.HandleFunc(adminapi.ConsoleClusterPath, n.consoleGET(n.consoleCluster))
	mux.HandleFunc(adminapi.ConsoleTopicsPath, n.consoleGET(n.consoleTopics))
	mux.HandleFunc(adminapi.ConsoleTopicPath, n.consoleGET(n.consoleTopic))
	mux.HandleFunc(adminapi.ConsoleTierMapPath, n.consoleGET(n.consoleTierMap))
	mux.HandleFunc(adminapi.ConsoleTransactionsPath, n.consoleGET(n.consoleTransactions)) // console_transactions.go
	n.mountConsoleGroups(mux)                                                             // console_groups.go
	n.mountConsoleActions(mux)                                                            // console_actions.go
}

// errConsoleRequest is a bad query: the answer is 400 with its text.
type errConsoleRequest struct{ msg string }

func (e errConsoleRequest) Error() string { return e.msg }

// errConsoleNotFound names a topic or partition the cache does not hold.
type errConsoleNotFound struct{ msg string }

func (e errConsoleNotFound) Error() string { return e.msg }

// consoleGET wraps an endpoint: GET only, the control plane must be up,
// and its error becomes 400, 404 or 503.
func (n *Node) consoleGET(serve func(*http.Request) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		if n.store == nil || n.replicas == nil {
			http.Error(w, "the node has not joined the cluster yet", http.StatusServiceUnavailable)
			return
		}
		v, err := serve(r)
		switch err.(type) {
		case nil:
			writeAdminJSON(w, v)
		case errConsoleRequest:
			http.Error(w, err.Error(), http.StatusBadRequest)
		case errConsoleNotFound:
			http.Error(w, err.Error(), http.StatusNotFound)
		default:
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		}
	}
}

// consoleLimit reads ?limit=, adminapi.ConsoleDefaultLimit when absent.
func consoleLimit(r *http.Request) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return adminapi.ConsoleDefaultLimit, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 || v > adminapi.ConsoleMaxLimit {
		return 0, errConsoleRequest{fmt.Sprintf("limit %q: want 1..%d", s, adminapi.ConsoleMaxLimit)}
	}
	return v, nil
}

// pageAfter is the page of at most limit items that follow cursor (from
// the first when cursor is ""), items being sorted by key, and the key of
// the page's last item when more follow ("" when none do): a console
// list's page and its next cursor.
func pageAfter[T any](items []T, key func(T) string, cursor string, limit int) ([]T, string) {
	var page []T
	for _, it := range items {
		if cursor != "" && key(it) <= cursor {
			continue
		}
		if len(page) == limit {
			return page, key(page[limit-1])
		}
		page = append(page, it)
	}
	return page, ""
}

func (n *Node) consoleCluster(r *http.Request) (any, error) {
	out := adminapi.ConsoleCluster{NodeID: n.cfg.NodeID, ClusterID: n.store.ClusterID(), Controller: -1, Nodes: []adminapi.ConsoleNode{}}
	if n.ctrl != nil {
		out.Controller = n.controllerID()
	}
	ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout)
	defer cancel()
	draining, _, err := n.store.Draining(ctx)
	if err != nil {
		out.DrainingErr = err.Error()
	}
	idx := map[int32]int{}
	for _, reg := range n.store.Registrations() {
		b := reg.Broker
		idx[b.NodeID] = len(out.Nodes)
		out.Nodes = append(out.Nodes, adminapi.ConsoleNode{ID: b.NodeID, Address: fmt.Sprintf("%s:%d", b.Host, b.Port), Rack: b.Rack,
			Live: !reg.Fenced, Fenced: reg.Fenced, Draining: draining[b.NodeID], ControlledShutdown: b.ControlledShutdown})
	}
	for _, t := range n.store.Topics() {
		out.Topics++
		for _, ps := range n.store.Partitions(t.Name) {
			out.Partitions++
			if ps.Leader < 0 {
				out.Offline++
			}
			if len(ps.ISR) < len(ps.Replicas) {
				out.UnderReplicated++
			}
			for i, id := range ps.Replicas {
				k, ok := idx[id]
				if !ok {
					continue
				}
				out.Nodes[k].Replicas++
				if i == 0 {
					out.Nodes[k].Preferred++
				}
			}
			if k, ok := idx[ps.Leader]; ok {
				out.Nodes[k].Leaders++
			}
		}
	}
	return out, nil
}

func (n *Node) consoleTopics(r *http.Request) (any, error) {
	limit, err := consoleLimit(r)
	if err != nil {
		return nil, err
	}
	cursor, internal := r.URL.Query().Get("cursor"), r.URL.Query().Get("internal") == "1"
	out := adminapi.ConsoleTopics{NodeID: n.cfg.NodeID, Topics: []adminapi.ConsoleTopic{}}
	for _, t := range n.store.Topics() { // sorted by name
		if t.Internal && !internal {
			continue
		}
		out.Total++
		if t.Name <= cursor && cursor != "" {
			continue
		}
		if len(out.Topics) == limit {
			out.Next = out.Topics[limit-1].Name
			continue
		}
		out.Topics = append(out.Topics, n.consoleTopicLine(t))
	}
	return out, nil
}

// consoleTopicLine sums one topic's partitions: their state from the
// cache, the local replicas' bytes and the remote segments' metadata.
func (n *Node) consoleTopicLine(t controlplane.Topic) adminapi.ConsoleTopic {
	line := adminapi.ConsoleTopic{Name: t.Name, ID: t.ID.String(), Partitions: t.Partitions, ReplicationFactor: t.ReplicationFactor,
		Internal: t.Internal, Configs: t.Configs}
	if line.Configs == nil {
		line.Configs = map[string]string{}
	}
	rl := n.RemoteLog()
	for _, ps := range n.store.Partitions(t.Name) {
		if ps.Leader < 0 {
			line.Offline++
		}
		if len(ps.ISR) < len(ps.Replicas) {
			line.UnderReplicated++
		}
		if rep, ok := n.replicas.Local(t.Name, ps.Partition); ok {
			line.LocalPartitions++
			line.LocalBytes += localBytes(rep)
		}
		if rl != nil {
			segs, bytes := remoteFinished(rl.ListRemoteSegments(t.ID, ps.Partition))
			line.RemoteSegments += segs
			line.RemoteBytes += bytes
		}
	}
	return line
}

func localBytes(rep *partition.Replica) int64 {
	var b int64
	for _, s := range rep.Log().Segments() {
		b += s.Size
	}
	return b
}

func remoteFinished(segs []controlplane.RemoteSegment) (n int, bytes int64) {
	for _, s := range segs {
		if s.State == controlplane.CopyFinished {
			n++
			bytes += s.Size
		}
	}
	return n, bytes
}

// consoleTopicOf reads ?topic= and finds it in the cache.
func (n *Node) consoleTopicOf(r *http.Request) (controlplane.Topic, error) {
	name := r.URL.Query().Get("topic")
	if name == "" {
		return controlplane.Topic{}, errConsoleRequest{"topic is required"}
	}
	t, ok := n.store.Topic(name)
	if !ok {
		return controlplane.Topic{}, errConsoleNotFound{fmt.Sprintf("topic %q does not exist", name)}
	}
	return t, nil
}

func (n *Node) consoleTopic(r *http.Request) (any, error) {
	t, err := n.consoleTopicOf(r)
	if err != nil {
		return nil, err
	}
	limit, err := consoleLimit(r)
	if err != nil {
		return nil, err
	}
	cursor := int32(-1)
	if s := r.URL.Query().Get("cursor"); s != "" {
		v, err := strconv.ParseInt(s, 10, 32)
		if err != nil || v < 0 {
			return nil, errConsoleRequest{fmt.Sprintf("cursor %q: want a partition number", s)}
		}
		cursor = int32(v)
	}
	out := adminapi.ConsoleTopicDetail{NodeID: n.cfg.NodeID, Topic: n.consoleTopicLine(t), Partitions: []adminapi.ConsolePartition{}, Next: -1}
	rl := n.RemoteLog()
	for _, ps := range n.store.Partitions(t.Name) { // by partition
		if ps.Partition <= cursor {
			continue
		}
		if len(out.Partitions) == limit {
			out.Next = out.Partitions[limit-1].Partition
			break
		}
		line := adminapi.ConsolePartition{Partition: ps.Partition, Leader: ps.Leader, LeaderEpoch: ps.LeaderEpoch,
			Replicas: orEmpty(ps.Replicas), ISR: orEmpty(ps.ISR), ELR: orEmpty(ps.ELR), AddingReplicas: orEmpty(ps.AddingReplicas),
			RemovingReplicas: orEmpty(ps.RemovingReplicas), LogStartOffset: -1, LocalStartOffset: -1, HighWatermark: -1, LogEndOffset: -1, LocalBytes: -1}
		var segs []controlplane.RemoteSegment
		if rl != nil {
			segs = rl.ListRemoteSegments(t.ID, ps.Partition)
			line.RemoteSegments, line.RemoteBytes = remoteFinished(segs)
		}
		if rep, ok := n.replicas.Local(t.Name, ps.Partition); ok {
			l := rep.Log()
			line.Local = true
			line.LocalStartOffset, line.LogEndOffset, line.HighWatermark = l.LogStartOffset(), l.LogEndOffset(), rep.HighWatermark()
			line.LogStartOffset, line.LocalBytes = line.LocalStartOffset, localBytes(rep)
			if start, ok := controlplane.RemoteLogStartOffset(segs); ok && start < line.LogStartOffset {
				line.LogStartOffset = start
			}
		}
		out.Partitions = append(out.Partitions, line)
	}
	return out, nil
}

func orEmpty(s []int32) []int32 {
	if s == nil {
		return []int32{}
	}
	return s
}

func (n *Node) consoleTierMap(r *http.Request) (any, error) {
	t, err := n.consoleTopicOf(r)
	if err != nil {
		return nil, err
	}
	s := r.URL.Query().Get("partition")
	p, err := strconv.ParseInt(s, 10, 32)
	if err != nil || p < 0 {
		return nil, errConsoleRequest{fmt.Sprintf("partition %q: want a partition number", s)}
	}
	ps, ok := n.store.Partition(t.Name, int32(p))
	if !ok {
		return nil, errConsoleNotFound{fmt.Sprintf("partition %s-%d does not exist", t.Name, p)}
	}
	m := adminapi.ConsoleTierMap{NodeID: n.cfg.NodeID, Topic: t.Name, Partition: ps.Partition, Leader: ps.Leader, Replicas: orEmpty(ps.Replicas),
		LogStartOffset: -1, LocalLogStartOffset: -1, HighWatermark: -1, LogEndOffset: -1, LastTieredOffset: -1,
		LocalSegments: []adminapi.ConsoleSegment{}, RemoteSegments: []adminapi.ConsoleSegment{}}
	tc := n.replicas.TopicConfig(t)
	m.RemoteStorage = tc.Bool(config.RemoteStorageEnable)
	m.RetentionMs, m.RetentionBytes = tc.Int64(config.RetentionMs), tc.Int64(config.RetentionBytes)
	m.LocalRetentionMs, m.LocalRetentionBytes = tc.Int64(config.LocalRetentionMs), tc.Int64(config.LocalRetentionBytes)
	var remote []controlplane.RemoteSegment
	if rl := n.RemoteLog(); rl != nil {
		remote = rl.ListRemoteSegments(t.ID, ps.Partition)
	}
	if end, ok := controlplane.RemoteLogEndOffset(remote); ok {
		m.LastTieredOffset = end
	}
	for _, s := range remote {
		if s.State == controlplane.DeleteFinished {
			continue
		}
		m.RemoteSegments = append(m.RemoteSegments, adminapi.ConsoleSegment{BaseOffset: s.BaseOffset, EndOffset: s.EndOffset, Size: s.Size,
			MaxTimestamp: s.MaxTimestamp, State: s.State.String(), LeaderEpoch: s.LeaderEpoch})
	}
	if rep, ok := n.replicas.Local(t.Name, ps.Partition); ok {
		l := rep.Log()
		m.Local = true
		m.LocalLogStartOffset, m.LogEndOffset, m.HighWatermark = l.LogStartOffset(), l.LogEndOffset(), rep.HighWatermark()
		m.LogStartOffset = m.LocalLogStartOffset
		for _, s := range l.Segments() {
			seg := adminapi.ConsoleSegment{BaseOffset: s.BaseOffset, EndOffset: s.NextOffset - 1, Size: s.Size, MaxTimestamp: s.MaxTimestamp, State: "closed"}
			if s.Active {
				seg.State = "active"
			}
			seg.Tiered = s.NextOffset > s.BaseOffset && s.NextOffset-1 <= m.LastTieredOffset
			if !s.Active && s.NextOffset > m.LastTieredOffset+1 && s.Size > 0 {
				m.UploadLagSegments++
				m.UploadLagBytes += s.Size
			}
			m.LocalSegments = append(m.LocalSegments, seg)
		}
		m.UploadLagOffsets = max(m.HighWatermark-(m.LastTieredOffset+1), 0)
	}
	if start, ok := controlplane.RemoteLogStartOffset(remote); ok && (m.LogStartOffset < 0 || start < m.LogStartOffset) {
		m.LogStartOffset = start
	}
	m.LocalSegments, m.LocalSegmentsOmitted = newest(m.LocalSegments)
	m.RemoteSegments, m.RemoteSegmentsOmitted = newest(m.RemoteSegments)
	return m, nil
}

// newest keeps the last adminapi.ConsoleMaxSegments of segs.
func newest(segs []adminapi.ConsoleSegment) ([]adminapi.ConsoleSegment, int) {
	if k := len(segs) - adminapi.ConsoleMaxSegments; k > 0 {
		return slices.Clone(segs[k:]), k
	}
	return segs, 0
}
