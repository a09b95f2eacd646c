package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
)

const modPath = "github.com/shale-io/shale/"

// pairRow is one line of the go-bench section: a Shale figure beside its peer
// measured in the same `go test` run, and their ratio.
type pairRow struct {
	label string
	pkg   string   // import path below the module, e.g. "segment/batch"
	names []string // candidate benchmark names for the figure, first found wins
	peers []string // candidate names for the peer; none found: informational
	unit  string   // "MB/s" or "ns/op"
	// peerUnit, when set, takes the peer from the figure's own benchmark,
	// reported under this unit (a benchpair benchmark: "bypassed-ns/op"),
	// instead of from peers.
	peerUnit string
	peerDesc string
	goal     string // printed as is, e.g. ">= 0.80"; empty for none
}

// rows lists the report's go-bench lines. Throughput rows (MB/s) print
// figure/peer, where higher is better; latency rows (ns/op) print figure/peer,
// where lower is better (the overhead over the peer).
var rows = []pairRow{
	{label: "segment append", pkg: "segment", names: []string{"BenchmarkAppend"}, peers: []string{"BenchmarkPlainWrite"}, unit: "MB/s", peerDesc: "plain sequential write", goal: ">= 0.80"},
	{label: "offset lookup", pkg: "segment", names: []string{"BenchmarkOffsetLookup"}, unit: "ns/op"},
	{label: "random read (locate range)", pkg: "segment", names: []string{"BenchmarkReadRandom"}, unit: "ns/op"},
	{label: "batch parse+CRC", pkg: "segment/batch", names: []string{"BenchmarkParseVerify"}, peers: []string{"BenchmarkCRC32C"}, unit: "MB/s", peerDesc: "bare crc32c"},
	{label: "compress", pkg: "segment/batch", names: []string{"BenchmarkCompress"}, unit: "MB/s"},
	{label: "decompress", pkg: "segment/batch", names: []string{"BenchmarkDecompress"}, unit: "MB/s"},
	{label: "cold replay S3, bare fetch client", pkg: "internal/tieringe2e", names: []string{"BenchmarkColdTierS3/ColdReplayRawFetchS3"}, peers: []string{"BenchmarkColdTierS3/PlainRangedGetS3"}, unit: "MB/s", peerDesc: "minio-go ranged GETs of the same objects", goal: ">= 0.70"},
	{label: "cold replay S3, franz-go consumer", pkg: "internal/tieringe2e", names: []string{"BenchmarkColdTierS3/ColdReplayS3"}, peers: []string{"BenchmarkColdTierS3/PlainRangedGetS3"}, unit: "MB/s", peerDesc: "minio-go ranged GETs of the same objects", goal: ">= 0.70"},
	{label: "produce RF=3 acks=all", pkg: "internal/replicationtest", names: []string{"BenchmarkReplicatedProduce/rf3-acks-all"}, peers: []string{"BenchmarkReplicatedProduce/rf1-acks-1"}, unit: "MB/s", peerDesc: "RF=1 acks=1 (same run)"},
	{label: "transactional produce RF=3", pkg: "internal/replicationtest", names: []string{"BenchmarkTransactionalProduce/txn-100ms"}, peers: []string{"BenchmarkTransactionalProduce/idempotent"}, unit: "MB/s", peerDesc: "idempotent acks=all (same run; a transaction every 100 ms)"},
	{label: "kafka round trip", pkg: "kafka", names: []string{"BenchmarkRoundTrip/server"}, peers: []string{"BenchmarkRoundTrip/tcp-echo"}, unit: "ns/op", peerDesc: "bare TCP echo"},
	{label: "fetch of a 4 KiB file range", pkg: "kafka", names: []string{"BenchmarkFileBodyRoundTrip/file"}, peers: []string{"BenchmarkFileBodyRoundTrip/memory"}, unit: "ns/op", peerDesc: "the same bytes from memory"},
	{label: "produce, quota+ACL checks, none set", pkg: "ingest", names: []string{"BenchmarkProduceChecks"}, peerUnit: "bypassed-ns/op", unit: "ns/op", peerDesc: "the same produce, no checks", goal: "<= 1.02"},
	{label: "fetch, quota+ACL checks, none set", pkg: "fetch", names: []string{"BenchmarkFetchChecks"}, peerUnit: "bypassed-ns/op", unit: "ns/op", peerDesc: "the same fetch, no checks", goal: "<= 1.02"},
	// Issue 23: one node killed with SIGKILL and restarted, 1,000
	// partitions beside 8 in the same run: until every partition is open
	// and recovered, and until a produce to each is acknowledged.
	{label: "kill -9 restart 1000p, opened", pkg: "internal/clustertest", names: []string{"BenchmarkUncleanRestart/partitions-1000"},
		peers: []string{"BenchmarkUncleanRestart/partitions-8"}, unit: "opened-ms", peerDesc: "8 partitions (same run)", goal: "<= 2.5"},
	{label: "kill -9 restart 1000p, ready", pkg: "internal/clustertest", names: []string{"BenchmarkUncleanRestart/partitions-1000"},
		peers: []string{"BenchmarkUncleanRestart/partitions-8"}, unit: "ready-ms", peerDesc: "8 partitions (same run)", goal: "<= 2.5"},
	{label: "kill -9 ISR rejoin 1000p, RF=3", pkg: "internal/clustertest", names: []string{"BenchmarkISRRejoin/partitions-1000"},
		peers: []string{"BenchmarkISRRejoin/partitions-8"}, unit: "rejoin-ms", peerDesc: "8 partitions (same run)", goal: "<= 2.5"},
	// Issue 23: acks=all produce on three nodes, one RF=3 topic of 1,000
	// partitions beside 8: its rate, and the nodes' CPU per GB.
	{label: "produce acks=all 1000p, RF=3", pkg: "internal/clustertest", names: []string{"BenchmarkSpreadProduce/partitions-1000"},
		peers: []string{"BenchmarkSpreadProduce/partitions-8"}, unit: "MB/s", peerDesc: "8 partitions (same run)", goal: ">= 0.70"},
	{label: "produce acks=all 1000p, CPU/GB", pkg: "internal/clustertest", names: []string{"BenchmarkSpreadProduce/partitions-1000"},
		peers: []string{"BenchmarkSpreadProduce/partitions-8"}, unit: "node-cpu-s/GB", peerDesc: "8 partitions (same run)", goal: "<= 2.0"},
	// Issue 23: a franz-go consumer of all those partitions, reading back
	// what the producer wrote.
	{label: "consume 1000p, RF=3", pkg: "internal/clustertest", names: []string{"BenchmarkSpreadProduce/partitions-1000"},
		peers: []string{"BenchmarkSpreadProduce/partitions-8"}, unit: "consume-MB/s", peerDesc: "8 partitions (same run)", goal: ">= 0.70"},
	{label: "consume 1000p, CPU/GB", pkg: "internal/clustertest", names: []string{"BenchmarkSpreadProduce/partitions-1000"},
		peers: []string{"BenchmarkSpreadProduce/partitions-8"}, unit: "consume-node-cpu-s/GB", peerDesc: "8 partitions (same run)"},
	// Issue 23: one RF=3 topic of 1,000 and 10,000 partitions on three
	// nodes beside 8: until led with full ISRs, then idle.
	{label: "partitions led, full ISRs", pkg: "internal/clustertest", names: []string{"BenchmarkManyPartitions"},
		peers: []string{"BenchmarkManyPartitions/partitions-8"}, unit: "ready-ms", peerDesc: "8 partitions (same run)"},
	{label: "partitions idle, busiest node CPU", pkg: "internal/clustertest", names: []string{"BenchmarkManyPartitions"},
		peers: []string{"BenchmarkManyPartitions/partitions-8"}, unit: "node-idle-cpu-%", peerDesc: "8 partitions (same run)"},
	{label: "partitions idle a window on, busiest node CPU", pkg: "internal/clustertest", names: []string{"BenchmarkManyPartitions"},
		peers: []string{"BenchmarkManyPartitions/partitions-8"}, unit: "node-steady-cpu-%", peerDesc: "8 partitions (same run)"},
	{label: "partitions idle, busiest allocator", pkg: "internal/clustertest", names: []string{"BenchmarkManyPartitions"},
		peers: []string{"BenchmarkManyPartitions/partitions-8"}, unit: "node-idle-alloc-KiB/s", peerDesc: "8 partitions (same run)"},
	{label: "partitions idle, largest node RSS", pkg: "internal/clustertest", names: []string{"BenchmarkManyPartitions"},
		peers: []string{"BenchmarkManyPartitions/partitions-8"}, unit: "rss-mb", peerDesc: "8 partitions (same run)"},
}

// lowerIsBetter reports whether a smaller figure in unit is the better one:
// times and costs (CPU seconds per GB).
func lowerIsBetter(unit string) bool {
	return unit == "ns/op" || strings.HasSuffix(unit, "-ms") || strings.HasSuffix(unit, "/GB") ||
		strings.HasSuffix(unit, "-%") || strings.HasSuffix(unit, "-mb") || strings.HasSuffix(unit, "-KiB/s")
}

// lookup returns the benchmarks of pkg named name or name/<sub>, by sub-name
// ("" for name itself), and the sub-names in order.
func lookup(med map[Key]map[string]float64, pkg, name string) (map[string]map[string]float64, []string) {
	out := map[string]map[string]float64{}
	var subs []string
	for k, v := range med {
		if k.Pkg != modPath+pkg {
			continue
		}
		if k.Name == name {
			out[""] = v
			subs = append(subs, "")
		} else if sub, ok := strings.CutPrefix(k.Name, name+"/"); ok {
			out[sub] = v
			subs = append(subs, sub)
		}
	}
	slices.Sort(subs)
	return out, subs
}

// findFirst returns the first candidate name with any results.
func findFirst(med map[Key]map[string]float64, pkg string, names []string) (string, map[string]map[string]float64, []string) {
	for _, n := range names {
		if m, subs := lookup(med, pkg, n); len(subs) > 0 {
			return n, m, subs
		}
	}
	return "", nil, nil
}

// writeGoBench prints the go-bench section and returns the keys it used.
func writeGoBench(w io.Writer, med map[Key]map[string]float64) map[Key]bool {
	used := map[Key]bool{}
	for _, r := range rows {
		name, figs, subs := findFirst(med, r.pkg, r.names)
		if name == "" {
			fmt.Fprintf(w, "  %-34s MISSING: no %s in ./%s\n", r.label, strings.Join(r.names, " or "), r.pkg)
			continue
		}
		peerName, peers, peerSubs := findFirst(med, r.pkg, r.peers)
		peerUnit := r.unit
		if r.peerUnit != "" {
			peerName, peers, peerSubs, peerUnit = name, figs, subs, r.peerUnit
		}
		for _, sub := range subs {
			used[Key{modPath + r.pkg, joinName(name, sub)}] = true
			label := r.label
			if sub != "" {
				label += " " + sub
			}
			fig, ok := figs[sub][r.unit]
			if !ok {
				fmt.Fprintf(w, "  %-34s %s reports no %s\n", label, joinName(name, sub), r.unit)
				continue
			}
			var peer map[string]float64
			peerSub := sub
			if p, ok := peers[sub]; ok {
				peer = p
			} else if len(peerSubs) == 1 {
				peerSub = peerSubs[0]
				peer = peers[peerSub]
			}
			pv, ok := peer[peerUnit]
			if peerName == "" || !ok || pv == 0 {
				note := "informational, no peer benchmark"
				if r.peerUnit != "" {
					note = "informational, no " + r.peerUnit
				} else if len(r.peers) > 0 {
					note = "informational, peer " + strings.Join(r.peers, "/") + " not found"
				}
				fmt.Fprintf(w, "  %-34s %12s  (%s)\n", label, formatFig(fig, r.unit), note)
				continue
			}
			used[Key{modPath + r.pkg, joinName(peerName, peerSub)}] = true
			ratio := fig / pv
			dir := "higher is better"
			if lowerIsBetter(r.unit) {
				dir = "lower is better"
			}
			fmt.Fprintf(w, "  %-34s %12s  vs %-24s %12s  ratio %5.3f (%s)%s\n", label, formatFig(fig, r.unit),
				r.peerDesc, formatFig(pv, r.unit), ratio, dir, verdict(r.goal, ratio))
		}
	}
	return used
}

// writeOthers prints, as informational lines, every benchmark no row used.
func writeOthers(w io.Writer, med map[Key]map[string]float64, used map[Key]bool) {
	var keys []Key
	for k := range med {
		if !used[k] {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return
	}
	slices.SortFunc(keys, func(a, b Key) int { return strings.Compare(a.Pkg+" "+a.Name, b.Pkg+" "+b.Name) })
	fmt.Fprintln(w, "  other benchmarks (informational, no peer):")
	for _, k := range keys {
		v := med[k]
		s := formatFig(v["ns/op"], "ns/op")
		if mb, ok := v["MB/s"]; ok {
			s += "  " + formatFig(mb, "MB/s")
		}
		fmt.Fprintf(w, "    %-50s %s\n", strings.TrimPrefix(k.Pkg, modPath)+" "+k.Name, s)
	}
}

func joinName(name, sub string) string {
	if sub == "" {
		return name
	}
	return name + "/" + sub
}

func formatFig(v float64, unit string) string {
	switch unit {
	case "MB/s":
		if v >= 1000 {
			return fmt.Sprintf("%.2f GB/s", v/1000)
		}
		return fmt.Sprintf("%.1f MB/s", v)
	case "ns/op":
		if v >= 1e6 {
			return fmt.Sprintf("%.2f ms", v/1e6)
		}
		if v >= 1e4 {
			return fmt.Sprintf("%.1f µs", v/1e3)
		}
		return fmt.Sprintf("%.0f ns", v)
	}
	if strings.HasSuffix(unit, "-ms") {
		return fmt.Sprintf("%.0f ms", v)
	}
	return fmt.Sprintf("%.3g %s", v, unit)
}

// verdict renders a goal such as ">= 0.80" or "<= 2.0" against ratio.
func verdict(goal string, ratio float64) string {
	if goal == "" {
		return ""
	}
	var want float64
	var op string
	if _, err := fmt.Sscanf(goal, "%s %g", &op, &want); err != nil {
		return "  goal " + goal
	}
	met := (op == ">=" && ratio >= want) || (op == "<=" && ratio <= want)
	if met {
		return "  goal " + goal + " met"
	}
	return "  goal " + goal + " NOT MET"
}
