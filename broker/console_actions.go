package broker

// The console's session and safe actions (adminapi.ConsoleSessionPath and
// the action paths). The admin listener's authentication decides who may
// call them: the actions are POSTs, served only to an admin role and only
// from the same origin (adminauth.Handler). Each action is what the CLI
// does over Kafka (shale partition elect-preferred, shale cluster
// rebalance, shale group reset-offsets), run by the node as a Kafka admin
// client (sdk.Admin) of its own inter-broker listener, dialled with its
// inter-broker identity: the broker's own request handlers decide, as
// they do for any client, and their errors are the answer's.
//
// broker imports sdk here, and only here: the actions need a Kafka client
// that finds each partition's leader and each group's coordinator, which
// is what sdk's admin client is.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/infra/adminauth"
	"github.com/shale-io/shale/sdk"
)

// consoleActionTimeout bounds one action's Kafka requests.
const consoleActionTimeout = 30 * time.Second

// maxConsoleActionBytes bounds an action's request body.
const maxConsoleActionBytes = 1 << 20

// mountConsoleActions mounts the session and the actions.
func (n *Node) mountConsoleActions(mux *http.ServeMux) {
	mux.HandleFunc(adminapi.ConsoleSessionPath, n.serveConsoleSession)
	mux.HandleFunc(adminapi.ConsoleElectPreferredPath, consoleAction(n, n.consoleElectPreferred))
	mux.HandleFunc(adminapi.ConsoleRebalancePath, consoleAction(n, n.consoleRebalance))
	mux.HandleFunc(adminapi.ConsoleResetOffsetsPath, consoleAction(n, n.consoleResetOffsets))
}

// serveConsoleSession answers the caller's role, for the console to show
// or hide its actions (the listener refuses them to a read role anyway).
func (n *Node) serveConsoleSession(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	role := adminauth.RoleFrom(r.Context())
	writeAdminJSON(w, adminapi.ConsoleSession{NodeID: n.cfg.NodeID, Role: role.String(), CanWrite: role == adminauth.RoleAdmin})
}

// errAction is an action's refusal with its HTTP status and text.
type errAction struct {
	code int
	msg  string
}

func (e errAction) Error() string { return e.msg }

func actionErr(code int, format string, args ...any) error {
	return errAction{code: code, msg: fmt.Sprintf(format, args...)}
}

// consoleAction wraps an action: POST only (the listener has checked the
// role and the origin; a handler served without it, in a test, checks the
// role again), a JSON body of Req decoded, the node joined, and its
// error's status.
func consoleAction[Req any](n *Node, run func(context.Context, *sdk.Admin, Req) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		if adminauth.RoleFrom(r.Context()) != adminauth.RoleAdmin {
			http.Error(w, "Forbidden: the console's actions need an admin token", http.StatusForbidden)
			return
		}
		if n.store == nil || n.replicas == nil || n.interBroker == nil {
			http.Error(w, "the node has not joined the cluster yet", http.StatusServiceUnavailable)
			return
		}
		var req Req
		dec := json.NewDecoder(io.LimitReader(r.Body, maxConsoleActionBytes))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
			return
		}
		a, ctx, done, err := n.consoleAdmin(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		defer done()
		v, err := run(ctx, a, req)
		var ae errAction
		switch {
		case err == nil:
			n.logger.Info("console action", "path", r.URL.Path, "remote", r.RemoteAddr)
			writeAdminJSON(w, v)
		case errors.As(err, &ae):
			http.Error(w, ae.msg, ae.code)
		default:
			http.Error(w, err.Error(), http.StatusBadGateway)
		}
	}
}

// consoleAdmin is a Kafka admin client of the node's own inter-broker
// listener, with its inter-broker identity, and a context of parent
// bounded by consoleActionTimeout; the caller calls done, which ends the
// context and closes the client.
func (n *Node) consoleAdmin(parent context.Context) (a *sdk.Admin, ctx context.Context, done func(), err error) {
	if n.interBroker == nil {
		return nil, nil, nil, errors.New("the node has not joined the cluster yet")
	}
	addr, ok := n.selfKafkaAddr()
	if !ok {
		return nil, nil, nil, errors.New("the node is not registered")
	}
	a, err = sdk.NewAdmin(sdk.WithSeeds(addr), sdk.WithClientID("shale-console"), sdk.WithKgoOptions(n.interBroker.KgoOpts()...))
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, cancel := context.WithTimeout(parent, consoleActionTimeout)
	return a, ctx, func() { cancel(); a.Close() }, nil
}

// selfKafkaAddr is the host:port this node registered, the address the
// other nodes dial.
func (n *Node) selfKafkaAddr() (string, bool) {
	for _, b := range n.store.Brokers() {
		if b.NodeID == n.cfg.NodeID {
			return net.JoinHostPort(b.Host, strconv.Itoa(int(b.Port))), true
		}
	}
	return "", false
}

// consoleElectPreferred runs ElectLeaders PREFERRED on the partitions named.
func (n *Node) consoleElectPreferred(ctx context.Context, a *sdk.Admin, req adminapi.ConsoleElectRequest) (any, error) {
	t, ok := n.store.Topic(req.Topic)
	if req.Topic == "" || !ok {
		return nil, actionErr(http.StatusNotFound, "topic %q not found", req.Topic)
	}
	parts := req.Partitions
	if len(parts) == 0 {
		for p := range t.Partitions {
			parts = append(parts, p)
		}
	}
	for _, p := range parts {
		if p < 0 || p >= t.Partitions {
			return nil, actionErr(http.StatusNotFound, "partition %s-%d not found", req.Topic, p)
		}
	}
	res, err := a.Kadm().ElectLeaders(ctx, kadm.ElectPreferredReplica, kadm.TopicsSet{req.Topic: toSet(parts)})
	if err != nil {
		return nil, err
	}
	out := adminapi.ConsoleElectResult{Results: []adminapi.ConsoleElection{}}
	for _, p := range slices.Sorted(maps.Keys(res[req.Topic])) {
		r := res[req.Topic][p]
		e := adminapi.ConsoleElection{Topic: req.Topic, Partition: p}
		if r.Err != nil {
			e.Error = r.Err.Error()
			if r.ErrMessage != "" {
				e.Error += ": " + r.ErrMessage
			}
		}
		out.Results = append(out.Results, e)
	}
	return out, nil
}

func toSet(parts []int32) map[int32]struct{} {
	s := make(map[int32]struct{}, len(parts))
	for _, p := range parts {
		s[p] = struct{}{}
	}
	return s
}

// reassignments are a plan's replica moves, sorted: what the rebalance
// submits (leader moves are the controller's).
func reassignments(plan adminapi.BalancePlan) []adminapi.ConsoleReassignment {
	var out []adminapi.ConsoleReassignment
	for _, m := range plan.Moves {
		if m.Kind == "leader" || len(m.Target) == 0 {
			continue
		}
		out = append(out, adminapi.ConsoleReassignment{Topic: m.Topic, Partition: m.Partition, Target: m.Target})
	}
	sortReassignments(out)
	return out
}

func sortReassignments(rs []adminapi.ConsoleReassignment) {
	slices.SortFunc(rs, func(a, b adminapi.ConsoleReassignment) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
}

// consoleRebalance plans again and submits the plan's reassignments
// (AlterPartitionReassignments) when they are those the operator saw.
func (n *Node) consoleRebalance(ctx context.Context, a *sdk.Admin, req adminapi.ConsoleRebalanceRequest) (any, error) {
	maxMoves := req.MaxMoves
	if maxMoves == 0 {
		maxMoves = n.cfg.BalancerMaxMoves
	}
	if maxMoves < 1 || maxMoves > 1000 {
		return nil, actionErr(http.StatusBadRequest, "max_moves %d: want 1..1000", req.MaxMoves)
	}
	plan, err := n.balancePlan(ctx, maxMoves)
	if err != nil {
		return nil, actionErr(http.StatusServiceUnavailable, "%v", err)
	}
	if plan.InFlight > 0 {
		return nil, actionErr(http.StatusConflict, "%d reassignments in progress: nothing submitted; wait for them or cancel them", plan.InFlight)
	}
	want := reassignments(plan)
	seen := slices.Clone(req.Moves)
	sortReassignments(seen)
	if !slices.EqualFunc(want, seen, func(a, b adminapi.ConsoleReassignment) bool {
		return a.Topic == b.Topic && a.Partition == b.Partition && slices.Equal(a.Target, b.Target)
	}) {
		return nil, actionErr(http.StatusConflict, "the plan changed since it was shown (%d reassignments now, %d shown): nothing submitted; review the new plan", len(want), len(seen))
	}
	if len(want) == 0 {
		return nil, actionErr(http.StatusConflict, "the plan has no reassignment: nothing to submit")
	}
	var areq kadm.AlterPartitionAssignmentsReq
	for _, m := range want {
		areq.Assign(m.Topic, m.Partition, m.Target)
	}
	res, err := a.Kadm().AlterPartitionAssignments(ctx, areq)
	if err != nil {
		return nil, err
	}
	out := adminapi.ConsoleRebalanceResult{Submitted: []adminapi.ConsoleReassignment{}}
	for _, m := range want {
		if r, ok := res[m.Topic][m.Partition]; ok && r.Err != nil {
			m.Error = r.Err.Error()
			if r.ErrMessage != "" {
				m.Error += ": " + r.ErrMessage
			}
		}
		out.Submitted = append(out.Submitted, m)
	}
	return out, nil
}

// consoleResetOffsets plans the reset (PlanOffsetReset, or
// PlanShareOffsetReset for a share group) and, unless a dry run, commits
// it (CommitOffsetReset or CommitShareOffsetReset: refused while the group
// has members). The admin client finds the group's coordinator, so the
// reset works from any node's console.
func (n *Node) consoleResetOffsets(ctx context.Context, a *sdk.Admin, req adminapi.ConsoleResetRequest) (any, error) {
	if req.Group == "" || req.Topic == "" {
		return nil, actionErr(http.StatusBadRequest, "name a group and a topic")
	}
	var pos sdk.Position
	switch req.To {
	case "earliest":
		pos = sdk.Start()
	case "latest":
		pos = sdk.End()
	case "offset":
		if req.Offset < 0 {
			return nil, actionErr(http.StatusBadRequest, "offset %d: want 0 or more", req.Offset)
		}
		pos = sdk.AtOffset(req.Offset)
	case "timestamp":
		if req.Timestamp < 0 {
			return nil, actionErr(http.StatusBadRequest, "timestamp %d: want Unix milliseconds", req.Timestamp)
		}
		pos = sdk.AtTime(time.UnixMilli(req.Timestamp))
	default:
		return nil, actionErr(http.StatusBadRequest, "to %q: want earliest, latest, offset or timestamp", req.To)
	}
	// A share group's start offsets move by AlterShareGroupOffsets; any
	// other group's committed offsets by OffsetCommit.
	isShare := true
	if _, err := a.DescribeShareGroup(ctx, req.Group); errors.Is(err, sdk.ErrGroupNotFound) {
		isShare = false
	} else if err != nil {
		return nil, err
	}
	plan, commit, typ := a.PlanOffsetReset, a.CommitOffsetReset, "consumer"
	if isShare {
		plan, commit, typ = a.PlanShareOffsetReset, a.CommitShareOffsetReset, "share"
	}
	moves, err := plan(ctx, req.Group, pos, []string{req.Topic}, req.Partitions...)
	if errors.Is(err, sdk.ErrTopicNotFound) {
		return nil, actionErr(http.StatusNotFound, "%v", err)
	}
	if err != nil {
		return nil, err
	}
	if !req.DryRun {
		err := commit(ctx, req.Group, moves)
		if errors.Is(err, sdk.ErrGroupNotEmpty) {
			return nil, actionErr(http.StatusConflict, "%v: stop its consumers first", err)
		}
		if err != nil {
			return nil, err
		}
	}
	out := adminapi.ConsoleResetResult{Group: req.Group, Type: typ, DryRun: req.DryRun, Partitions: []adminapi.ConsoleOffsetReset{}}
	for _, m := range moves {
		out.Partitions = append(out.Partitions, adminapi.ConsoleOffsetReset{Topic: m.Topic, Partition: m.Partition, OldOffset: m.Old,
			NewOffset: m.New, LogEndOffset: m.End, Lag: m.Lag})
	}
	return out, nil
}
