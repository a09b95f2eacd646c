package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/shale-io/shale/adminapi"
	"github.com/shale-io/shale/broker"
	"github.com/shale-io/shale/infra/config"
	"github.com/shale-io/shale/infra/objstore/objstoretest"
	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/internal/testnode"
)

// chromiumPath returns the browser: $SHALE_CHROMIUM, then bin/chromium at
// the module root (where `make tools` installs it), then chromium on $PATH.
// Without one the test fails: make test runs make tools first.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SHALE_CHROMIUM"); p != "" {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("SHALE_CHROMIUM=%s: %v", p, err)
		}
		return p
	}
	if p, err := filepath.Abs(filepath.Join("..", "bin", "chromium")); err == nil {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatalf("chromium not found: run `make tools` (build/install-chromium.sh installs it into ./bin) or set SHALE_CHROMIUM")
	}
	return p
}

const (
	opsToken = "console-test-token-0123456789abcdef"
	// readToken is a read-only token: it sees every page and no action.
	readToken = "console-read-token-0123456789abcdef"
	topic     = "orders"
	group     = "billing"
	txnID     = "invoicer"
	records   = 3000
	// committed is the group's offset on partition 0: its lag is
	// records-committed.
	committed = 1000
)

// cluster is three nodes (racks a, b, c) with their admin listeners
// behind a tokens file, their cold tier in one versitygw bucket.
type cluster struct {
	nodes []*broker.Node
}

func startCluster(t *testing.T) cluster {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", objstoretest.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", objstoretest.SecretKey)
	t.Setenv("AWS_REGION", objstoretest.Region)
	s3 := objstoretest.StartS3Server(t)
	bucket := s3.CreateBucket(t)
	tokens := filepath.Join(dir, "tokens")
	if err := os.WriteFile(tokens, []byte(opsToken+"\n"+readToken+" read\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := testnode.StartNATS(t, dir)
	var c cluster
	for i := range 3 {
		c.nodes = append(c.nodes, testnode.Start(t, filepath.Join(dir, "node", string(rune('a'+i))),
			testnode.WithNATS(srv.ClientURL()), testnode.WithNodeID(int32(i+1)), testnode.WithS3(s3.Endpoint, bucket),
			testnode.WithTiering(100*time.Millisecond), func(cfg *config.Broker) {
				cfg.AdminAuthTokensFile = tokens
				cfg.Rack = "rack-" + string(rune('a'+i))
				cfg.ConsumerLagSampleInterval = 200 * time.Millisecond
				cfg.ShareAutoOffsetReset = "earliest"
				// A record whose acknowledgement is lost is delivered
				// again when its lock expires: 2 s, not 30.
				cfg.GroupShareMinRecordLockDuration, cfg.GroupShareRecordLockDuration = time.Second, 2*time.Second
				// Leaders and replicas move only by the console's actions.
				cfg.BalancerEnable = false
				cfg.AutoLeaderRebalanceEnable = false
			}))
	}
	return c
}

// answerBasicAuth has the browser of ctx answer every HTTP Basic challenge
// as user with pass (as an operator typing the token into its prompt) and
// let every other request through; what fails the test names what. It
// returns how many challenges were answered so far.
func answerBasicAuth(t *testing.T, ctx context.Context, what, user, pass string) func() int32 {
	t.Helper()
	var asked atomic.Int32
	paused, auth := chromedp.Events(ctx, fetch.RequestPaused), chromedp.Events(ctx, fetch.AuthRequired)
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			chromedp.Call(ctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		for ev, err := range auth {
			if err != nil {
				return
			}
			asked.Add(1)
			chromedp.Call(ctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
				AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseProvideCredentials,
					Username: user, Password: pass}})
		}
	}()
	if _, err := chromedp.Call(ctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)}); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return asked.Load
}

// getJSON GETs an admin path of node with the token and decodes it.
func getJSON[T any](t *testing.T, ctx context.Context, node *broker.Node, path string) T {
	t.Helper()
	var v T
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+node.AdminAddr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+opsToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return v
}

// TestConsoleInBrowser runs the console in headless Chromium against a
// live three-node cluster with a tiered topic, the admin listeners behind
// a tokens file: a request without the token is refused (the page and its
// JSON), the browser asked for it (HTTP Basic) shows every page, and each
// shows the numbers the admin API reports: the node count and controller,
// a partition's ISR, the tier map's segments in the bucket, a group's lag
// after producing records; the groups page of a node that does not
// coordinate a share group lists it (type share, its coordinator) beside
// the consumer group, and its page shows its start offsets; the share
// group's reset is previewed and confirmed there (checkShareReset). SHALE_CONSOLE_SCREENSHOTS=DIR writes a PNG of
// each page there (docs/images holds the ones docs/console.md shows).
func TestConsoleInBrowser(t *testing.T) {
	chromium := chromiumPath(t)
	start := time.Now()
	c := startCluster(t)
	t.Logf("%v: cluster started", time.Since(start))
	ctx := proctest.Context(t, 2*time.Minute)
	n1 := c.nodes[0]
	base := "http://" + n1.AdminAddr()

	// Without the token: the console's page and its JSON are refused.
	for _, path := range []string{"/", "/console/", "/console/app.js", adminapi.ConsoleClusterPath} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(strings.Join(resp.Header.Values("WWW-Authenticate"), ","), "Basic") {
			t.Fatalf("GET %s without a token: %s, WWW-Authenticate %q; want 401 offering Basic", path, resp.Status, resp.Header.Values("WWW-Authenticate"))
		}
	}

	// A tiered topic, RF 3, records on partition 0 (some on 1 and 2), and
	// a group that committed part of partition 0.
	cl, err := kgo.NewClient(kgo.SeedBrokers(n1.KafkaAddr()), kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2*time.Millisecond),
		kgo.ProducerBatchMaxBytes(8<<10), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, 3, 3, map[string]*string{
		"segment.bytes": new("65536"), "local.retention.bytes": new("131072"), "remote.storage.enable": new("true"),
	}, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		t.Fatalf("create %s: %v", topic, err)
	}
	var recs []*kgo.Record
	for i := range records + 200 {
		p := int32(0)
		if i >= records {
			p = int32(1 + i%2)
		}
		recs = append(recs, &kgo.Record{Topic: topic, Partition: p, Key: fmt.Appendf(nil, "k%06d", i), Value: []byte(strings.Repeat("v", 100+i%50))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce: %v", err)
	}
	t.Logf("%v: produced", time.Since(start))
	offs := kadm.Offsets{}
	offs.Add(kadm.Offset{Topic: topic, Partition: 0, At: committed, LeaderEpoch: -1})
	if r, err := adm.CommitOffsets(ctx, group, offs); err != nil || r.Error() != nil {
		t.Fatalf("commit %s: %v %v", group, err, r.Error())
	}

	// A share group consumes a topic of its own meanwhile.
	sharedDone := startShared(t, ctx, n1, cl, adm)

	// A transaction left open on a topic of its own (the group's lag
	// counts all of orders).
	if r, err := adm.CreateTopic(ctx, 1, 3, nil, "audit"); err != nil || r.Err != nil {
		t.Fatalf("create audit: %v %v", err, r.Err)
	}
	tx := testnode.Client(t, n1.KafkaAddr(), kgo.TransactionalID(txnID), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := tx.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := tx.ProduceSync(ctx, &kgo.Record{Topic: "audit", Value: []byte("open")}).FirstErr(); err != nil {
		t.Fatalf("transactional produce: %v", err)
	}

	// The tier map of partition 0 settles: segments in the bucket, none
	// closed and waiting for upload.
	tierPath := adminapi.ConsoleTierMapPath + "?topic=" + topic + "&partition=0"
	var tm adminapi.ConsoleTierMap
	if err := proctest.Poll(60*time.Second, 100*time.Millisecond, func() bool {
		tm = getJSON[adminapi.ConsoleTierMap](t, ctx, n1, tierPath)
		return len(tm.RemoteSegments) > 1 && tm.UploadLagSegments == 0 && tm.HighWatermark == records && tm.LocalLogStartOffset > 0
	}); err != nil {
		t.Fatalf("partition 0's segments not uploaded: %v\n%+v", err, tm)
	}
	// The group's coordinator has sampled its lag.
	t.Logf("%v: tiered", time.Since(start))
	var coord *broker.Node
	var lags []adminapi.ConsumerLag
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		lags = lags[:0]
		for _, n := range c.nodes {
			l := getJSON[adminapi.ConsumerLag](t, ctx, n, adminapi.ConsumerLagPath+"?group="+group)
			lags = append(lags, l)
			// Partition 0 lags by records-committed; 1 and 2 have no
			// commit and lag by all they hold, 100 each.
			if len(l.Groups) == 1 && len(l.Groups[0].Partitions) == 3 && l.Groups[0].Partitions[0].Lag == records-committed &&
				l.Groups[0].Total() == records-committed+200 {
				coord = n
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatalf("the group's lag not sampled: %v\n%+v", err, lags)
	}

	t.Logf("%v: lag sampled", time.Since(start))

	// The lists are paged on the server: a page never holds more than its
	// limit, and the cursor goes on where the last page stopped.
	p1 := getJSON[adminapi.ConsoleTopicDetail](t, ctx, n1, adminapi.ConsoleTopicPath+"?topic="+topic+"&limit=2")
	p2 := getJSON[adminapi.ConsoleTopicDetail](t, ctx, n1, fmt.Sprintf("%s?topic=%s&limit=2&cursor=%d", adminapi.ConsoleTopicPath, topic, p1.Next))
	if len(p1.Partitions) != 2 || p1.Next != 1 || len(p2.Partitions) != 1 || p2.Partitions[0].Partition != 2 || p2.Next != -1 {
		t.Fatalf("partition pages: %+v then %+v; want 0, 1 (next 1) then 2 (next -1)", p1.Partitions, p2.Partitions)
	}
	tp := getJSON[adminapi.ConsoleTopics](t, ctx, n1, adminapi.ConsoleTopicsPath+"?limit=1&internal=1")
	if len(tp.Topics) != 1 || tp.Next != tp.Topics[0].Name || tp.Total < 4 {
		t.Fatalf("topic page of 1: %d topics, next %q, total %d", len(tp.Topics), tp.Next, tp.Total)
	}
	if resp, err := (&http.Client{}).Do(func() *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+adminapi.ConsoleTopicsPath+"?limit=100000", nil)
		req.Header.Set("Authorization", "Bearer "+opsToken)
		return req
	}()); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a page over the limit: %v %v, want 400", err, resp)
	} else {
		resp.Body.Close()
	}
	// The browser: it asks for credentials (the fetch domain answers the
	// challenge as an operator typing the token into its prompt) and
	// keeps them for the page's own requests.
	actx, cancel := chromedp.NewExecAllocator(ctx, append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium), chromedp.NoSandbox, chromedp.WindowSize(1280, 860), chromedp.Flag("disable-dev-shm-usage", true))...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	challenges := answerBasicAuth(t, bctx, "chromium", "ops", opsToken)
	shots := os.Getenv("SHALE_CONSOLE_SCREENSHOTS")
	// show opens a page (a hash route of the console on base) and waits
	// until the app has drawn it.
	show := func(base, route, page string) {
		t.Helper()
		var err error
		if route == "" {
			err = chromedp.Do(bctx, chromedp.Navigate(base+"/console/"))
		} else {
			_, err = chromedp.Run(bctx, chromedp.Evaluate[any](fmt.Sprintf("location.hash = %q", route)))
		}
		if err == nil {
			err = chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS(fmt.Sprintf(`body[data-page=%q]`, page))))
		}
		if err != nil {
			t.Fatalf("page %s %s: %v", route, page, err)
		}
		if shots != "" {
			png, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(shots, "console-"+page+".png"), png, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	text := func(sel string) string {
		t.Helper()
		s, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	count := func(sel string) int {
		t.Helper()
		n, err := chromedp.Run(bctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
		if err != nil {
			t.Fatalf("%s: %v", sel, err)
		}
		return n
	}

	t.Logf("%v: browser started", time.Since(start))
	// Cluster: the node count and the controller the API reports.
	show(base, "", "cluster")
	if challenges() == 0 {
		t.Fatal("the browser was served the console without being asked for credentials")
	}
	cc := getJSON[adminapi.ConsoleCluster](t, ctx, n1, adminapi.ConsoleClusterPath)
	if got := text("#node-count"); got != "3" || len(cc.Nodes) != 3 {
		t.Fatalf("cluster page: %s nodes, the API %d; want 3", got, len(cc.Nodes))
	}
	if got := text("#controller"); got != strconv.Itoa(int(cc.Controller)) || cc.Controller < 1 {
		t.Fatalf("cluster page: controller %s, the API %d", got, cc.Controller)
	}
	if got := text("#nodes tr[data-node='2'] td:nth-child(3)"); got != "rack-b" {
		t.Fatalf("cluster page: node 2's rack %q, want rack-b", got)
	}
	if err := chromedp.Do(bctx, chromedp.WaitVisible(chromedp.CSS("#nats-state"))); err != nil {
		t.Fatalf("cluster page: health: %v", err)
	}
	if got := text("#nats-state b"); got != "connected" {
		t.Fatalf("cluster page: NATS %q", got)
	}
	if got := text("#bucket-state b"); got != "ok" {
		t.Fatalf("cluster page: bucket %q", got)
	}

	// Topics: the tiered topic's line.
	show(base, "#/topics", "topics")
	if n := count(fmt.Sprintf("#topics tr[data-topic=%q]", topic)); n != 1 {
		t.Fatalf("topics page: %d lines for %s", n, topic)
	}

	// A topic's partitions: partition 0's ISR and high watermark.
	show(base, "#/topic/"+topic, "topic")
	td := getJSON[adminapi.ConsoleTopicDetail](t, ctx, n1, adminapi.ConsoleTopicPath+"?topic="+topic)
	isr := make([]string, len(td.Partitions[0].ISR))
	for i, id := range td.Partitions[0].ISR {
		isr[i] = strconv.Itoa(int(id))
	}
	if got, want := text("#partitions tr[data-partition='0'] td.isr"), strings.Join(isr, ", "); got != want || len(isr) != 3 {
		t.Fatalf("topic page: partition 0's ISR %q, the API %q; want 3 replicas", got, want)
	}
	if got := text("#partitions tr[data-partition='0'] td.hw"); got != "3,000" {
		t.Fatalf("topic page: partition 0's high watermark %q, want 3,000", got)
	}

	// The tier map: the segments in the bucket, drawn and listed.
	show(base, "#/tier/"+topic+"/0", "tier")
	tm = getJSON[adminapi.ConsoleTierMap](t, ctx, n1, tierPath)
	if got, want := text("#remote-count"), strconv.Itoa(len(tm.RemoteSegments)); got != want {
		t.Fatalf("tier map: %s remote segments, the API %s", got, want)
	}
	if n := count("#tiermap rect.remote"); n != len(tm.RemoteSegments) || n < 2 {
		t.Fatalf("tier map: %d bucket segments drawn, the API lists %d", n, len(tm.RemoteSegments))
	}
	if n := count("#tiermap rect.tiered, #tiermap rect.local, #tiermap rect.active"); n != len(tm.LocalSegments) {
		t.Fatalf("tier map: %d local segments drawn, the API lists %d", n, len(tm.LocalSegments))
	}
	if got, want := text("#edge-local-start"), fmt.Sprintf("%d", tm.LocalLogStartOffset); strings.ReplaceAll(got, ",", "") != want {
		t.Fatalf("tier map: local log start %q, the API %s", got, want)
	}

	// Groups: every node lists the cluster's groups. A share group,
	// consumed and left, on the console of a node that does not
	// coordinate it (node ids are 1..3).
	shareCoord := sharedDone()
	snode := c.nodes[int(shareCoord)%len(c.nodes)]
	t.Logf("%v: share group consumed (coordinator %d)", time.Since(start), shareCoord)
	sbase := "http://" + snode.AdminAddr()
	show(sbase, "", "cluster")
	show(sbase, "#/groups", "groups")
	want := strconv.Itoa(records - committed + 200)
	srow := fmt.Sprintf("#groups tr[data-group=%q] ", shareGroup)
	if typ, co, st := text(srow+"td.type"), text(srow+"td.coordinator"), text(srow+"td.state"); typ != "share" || co != fmt.Sprint(shareCoord) || st != "Empty" {
		t.Fatalf("groups page of node %d: %s is %q, coordinated by %q, %q; want share, %d, Empty", shareCoord%3+1, shareGroup, typ, co, st, shareCoord)
	}
	if got := strings.ReplaceAll(text(fmt.Sprintf("#groups tr[data-group=%q] td.lag", group)), ",", ""); got != want {
		t.Fatalf("groups page of node %d: %s's lag %s, want %s", shareCoord%3+1, group, got, want)
	}
	show(sbase, "#/group/"+shareGroup, "group")
	if got := text("#group-type"); got != "share" {
		t.Fatalf("share group page: type %q", got)
	}
	for p := range 3 {
		if got := text(fmt.Sprintf("#group-partitions tr[data-partition='%s-%d'] td.offset", shareTopic, p)); got != fmt.Sprint(sharePer) {
			t.Fatalf("share group page: %s-%d's start offset %q, want %d", shareTopic, p, got, sharePer)
		}
	}

	// A consumer group on the console of the node that coordinates it:
	// its lag over time too.
	cbase := "http://" + coord.AdminAddr()
	show(cbase, "", "cluster")
	show(cbase, "#/groups", "groups")
	if got := strings.ReplaceAll(text(fmt.Sprintf("#groups tr[data-group=%q] td.lag", group)), ",", ""); got != want {
		t.Fatalf("groups page: %s's lag %s, want %s", group, got, want)
	}
	show(cbase, "#/group/"+group, "group")
	if got := strings.ReplaceAll(text("#group-lag"), ",", ""); got != want {
		t.Fatalf("group page: lag %s, want %s", got, want)
	}
	if got := strings.ReplaceAll(text("#group-partitions tr[data-partition='orders-0'] td.lag"), ",", ""); got != strconv.Itoa(records-committed) {
		t.Fatalf("group page: partition 0's lag %s, want %d", got, records-committed)
	}
	if n := count("#lag-chart .lag-point"); n < 1 {
		t.Fatal("group page: no lag-over-time points")
	}

	// Transactions: every node lists the cluster's ids with their
	// coordinator; the page is shown on a node that does not coordinate
	// the id.
	var tother *broker.Node
	var tcoord int32
	var txs []adminapi.ConsoleTransactions
	if err := proctest.Poll(30*time.Second, 100*time.Millisecond, func() bool {
		txs, tother = txs[:0], nil
		for _, n := range c.nodes {
			x := getJSON[adminapi.ConsoleTransactions](t, ctx, n, adminapi.ConsoleTransactionsPath)
			txs = append(txs, x)
			if len(x.Transactions) != 1 || x.Transactions[0].ID != txnID || x.Transactions[0].State != "Ongoing" {
				return false
			}
			if tcoord = x.Transactions[0].Coordinator; tcoord != x.NodeID {
				tother = n
			}
		}
		return tother != nil
	}); err != nil {
		t.Fatalf("the transaction not listed by every node: %v\n%+v", err, txs)
	}
	tbase := "http://" + tother.AdminAddr()
	show(tbase, "", "cluster")
	show(tbase, "#/transactions", "transactions")
	if got := text(fmt.Sprintf("#transactions tr[data-txn=%q] td.state", txnID)); got != "Ongoing" {
		t.Fatalf("transactions page: %s is %q, want Ongoing", txnID, got)
	}
	if got := text("#txn-ongoing"); got != "1" {
		t.Fatalf("transactions page: %s ongoing, want 1", got)
	}
	if got := text(fmt.Sprintf("#transactions tr[data-txn=%q] td.coordinator", txnID)); got != fmt.Sprint(tcoord) {
		t.Fatalf("transactions page on node %s: coordinator %q, want %d", tother.AdminAddr(), got, tcoord)
	}

	// The balancer's plan.
	show(base, "", "cluster")
	show(base, "#/balance", "balance")
	bp := getJSON[adminapi.BalancePlan](t, ctx, n1, adminapi.BalancePath)
	if n := count("#loads tbody tr"); n != len(bp.Brokers) || n != 3 {
		t.Fatalf("balance page: %d brokers, the API %d", n, len(bp.Brokers))
	}

	t.Logf("%v: pages checked", time.Since(start))
	b := browser{ctx: bctx, show: show, text: text, count: count, shots: shots}
	checkActions(t, ctx, c, cl, adm, coord, b)
	checkShareReset(t, ctx, adm, snode, b)
	if shots != "" { // the group page's screenshot: a consumer group, its lag over time
		show(cbase, "#/group/"+group, "group")
	}
	t.Logf("%v: actions checked", time.Since(start))
	// A browser whose operator has no token (cancels the prompt), in a
	// browser context of its own (no credentials kept), is shown the
	// refusal, not a page.
	nctx, cancel := chromedp.NewContext(bctx, chromedp.WithNewBrowserContext())
	defer cancel()
	nauth := chromedp.Events(nctx, fetch.AuthRequired)
	npaused := chromedp.Events(nctx, fetch.RequestPaused)
	var cancelled atomic.Int32
	go func() {
		for ev, err := range npaused {
			if err != nil {
				return
			}
			chromedp.Call(nctx, fetch.ContinueRequest, fetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	go func() {
		for ev, err := range nauth {
			if err != nil {
				return
			}
			cancelled.Add(1)
			chromedp.Call(nctx, fetch.ContinueWithAuth, fetch.ContinueWithAuthParams{RequestID: ev.RequestID,
				AuthChallengeResponse: &fetch.AuthChallengeResponse{Response: fetch.AuthChallengeResponseResponseCancelAuth}})
		}
	}()
	if _, err := chromedp.Call(nctx, fetch.Enable, fetch.EnableParams{HandleAuthRequests: new(true)}); err != nil {
		t.Fatalf("unauthenticated browser: %v", err)
	}
	if err := chromedp.Do(nctx, chromedp.Navigate(base+"/console/")); err != nil {
		t.Fatalf("unauthenticated browser: %v", err)
	}
	body, err := chromedp.Run(nctx, chromedp.Text(chromedp.CSS("body")))
	if err != nil {
		t.Fatalf("unauthenticated browser: %v", err)
	}
	page, err := chromedp.Run(nctx, chromedp.Evaluate[string]("document.body.dataset.page || ''"))
	if err != nil {
		t.Fatalf("unauthenticated browser: %v", err)
	}
	if cancelled.Load() == 0 {
		t.Fatal("unauthenticated browser: not asked for credentials")
	}
	if !strings.Contains(body, "Unauthorized") || page != "" {
		t.Fatalf("unauthenticated browser: page %q, body %q; want the 401", page, body)
	}
	t.Logf("%v: refusal checked", time.Since(start))
	checkReadOnly(t, bctx, base, "http://"+coord.AdminAddr())
	t.Logf("%v: read-only checked", time.Since(start))
	// End the open transaction, so that the nodes stop with nothing
	// waiting on it.
	if err := tx.EndTransaction(ctx, kgo.TryAbort); err != nil {
		t.Fatalf("abort: %v", err)
	}
	t.Logf("%v: done", time.Since(start))
}
