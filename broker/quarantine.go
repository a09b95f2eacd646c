package broker

// The admin endpoints behind `shale tier quarantine list|restore|purge`
// (adminapi.QuarantinePath and its restore and purge paths).

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/tiering"
)

// mountQuarantine mounts the quarantine endpoints.
func (n *Node) mountQuarantine(mux *http.ServeMux) {
	mux.HandleFunc(adminapi.QuarantinePath, n.serveQuarantineList)
	mux.HandleFunc(adminapi.QuarantineRestorePath, n.serveQuarantineRestore)
	mux.HandleFunc(adminapi.QuarantinePurgePath, n.serveQuarantinePurge)
}

func quarantineEntryOf(e controlplane.QuarantineEntry) adminapi.QuarantineEntry {
	out := adminapi.QuarantineEntry{Topic: e.Topic, TopicID: e.TopicID.Hex(), Partition: e.Partition, ID: e.ID,
		Reason: string(e.Reason), State: string(e.State), BaseOffset: -1, EndOffset: -1, Objects: len(e.Objects),
		QuarantinedAt: e.QuarantinedAt.UTC(), PurgeAfter: e.PurgeAfter.UTC(), Note: e.Note}
	if e.Segment != nil {
		out.BaseOffset, out.EndOffset, out.Bytes = e.Segment.BaseOffset, e.Segment.EndOffset, e.Segment.Size
	}
	return out
}

func writeQuarantine(w http.ResponseWriter, q adminapi.Quarantine) {
	if q.Entries == nil {
		q.Entries = []adminapi.QuarantineEntry{}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(q)
}

func (n *Node) serveQuarantineList(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		http.Error(w, "GET only", http.StatusMethodNotAllowed)
		return
	}
	rl := n.RemoteLog()
	if rl == nil {
		http.Error(w, "this node has no cold tier", http.StatusServiceUnavailable)
		return
	}
	topic := r.URL.Query().Get("topic")
	var q adminapi.Quarantine
	for _, e := range rl.QuarantineEntries() {
		if topic == "" || e.Topic == topic {
			q.Entries = append(q.Entries, quarantineEntryOf(e))
		}
	}
	writeQuarantine(w, q)
}

// quarantineRequest decodes a POST's selector; ok false once it answered.
func (n *Node) quarantineRequest(w http.ResponseWriter, r *http.Request) (adminapi.QuarantineRequest, tiering.QuarantineSelector, *tiering.Manager, bool) {
	var req adminapi.QuarantineRequest
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return req, tiering.QuarantineSelector{}, nil, false
	}
	m := n.Tiering()
	if m == nil {
		http.Error(w, "this node has no cold tier", http.StatusServiceUnavailable)
		return req, tiering.QuarantineSelector{}, nil, false
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&req); err != nil || req.Topic == "" {
		http.Error(w, "want a JSON body with a topic", http.StatusBadRequest)
		return req, tiering.QuarantineSelector{}, nil, false
	}
	sel := tiering.QuarantineSelector{Topic: req.Topic, Partition: -1, IDs: req.IDs}
	if req.Partition != nil {
		sel.Partition = *req.Partition
	}
	return req, sel, m, true
}

func quarantineError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, tiering.ErrNoSuchEntry), errors.Is(err, tiering.ErrNotRestorable), errors.Is(err, tiering.ErrBeingRestored):
		code = http.StatusBadRequest
	case errors.Is(err, controlplane.ErrConflict):
		code = http.StatusConflict
	}
	http.Error(w, err.Error(), code)
}

// serveQuarantineRestore marks the selected entries Restoring, then waits
// (up to WaitMs) until the partition leaders restored them (the entry is
// gone) or refused them (Quarantined again, with a note).
func (n *Node) serveQuarantineRestore(w http.ResponseWriter, r *http.Request) {
	req, sel, m, ok := n.quarantineRequest(w, r)
	if !ok {
		return
	}
	asked, err := m.RequestRestore(r.Context(), sel)
	if err != nil {
		quarantineError(w, err)
		return
	}
	wait := 30 * time.Second
	if req.WaitMs > 0 {
		wait = time.Duration(req.WaitMs) * time.Millisecond
	}
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		now := map[string]controlplane.QuarantineEntry{}
		for _, e := range m.Select(sel) {
			now[e.TopicID.Hex()+"/"+e.ID] = e
		}
		var q adminapi.Quarantine
		pending := false
		for _, a := range asked {
			e, still := now[a.TopicID.Hex()+"/"+a.ID]
			out := quarantineEntryOf(a)
			switch {
			case !still:
				out.State, out.Result = "", "restored"
			case e.State == controlplane.Restoring:
				out, out.Result, pending = quarantineEntryOf(e), "restoring", true
			default:
				out, out.Result = quarantineEntryOf(e), "refused"
			}
			q.Entries = append(q.Entries, out)
		}
		if !pending || time.Now().After(deadline) {
			writeQuarantine(w, q)
			return
		}
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
	}
}

func (n *Node) serveQuarantinePurge(w http.ResponseWriter, r *http.Request) {
	_, sel, m, ok := n.quarantineRequest(w, r)
	if !ok {
		return
	}
	done, err := m.Purge(r.Context(), sel)
	if err != nil {
		quarantineError(w, err)
		return
	}
	var q adminapi.Quarantine
	for _, e := range done {
		out := quarantineEntryOf(e)
		out.State, out.Result = "", "purged"
		q.Entries = append(q.Entries, out)
	}
	writeQuarantine(w, q)
}
