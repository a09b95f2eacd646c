package controlplane

import (
	"sync"
	"testing"
	"time"

	"github.com/shale-io/shale/internal/proctest"
	"github.com/shale-io/shale/quota"
)

func TestClientQuotaKeys(t *testing.T) {
	for _, e := range []quota.Entity{
		{User: quota.Named("alice")},
		{User: quota.DefaultName()},
		{ClientID: quota.Named("")},
		{ClientID: quota.DefaultName()},
		{User: quota.Named("CN=app, O=x/ü"), ClientID: quota.Named("a.b")},
		{User: quota.DefaultName(), ClientID: quota.DefaultName()},
	} {
		got, err := parseQuotaKey(quotaKey(e))
		if err != nil || got != e {
			t.Errorf("%v: key %q parsed %v %v", e, quotaKey(e), got, err)
		}
	}
	for _, bad := range []string{"", "user", "user.x", "client.=.user.=", "user.=.user.=", "client.=.client.=", "x.="} {
		if _, err := parseQuotaKey(bad); err == nil {
			t.Errorf("key %q parsed", bad)
		}
	}
}

func TestClientQuotas(t *testing.T) {
	nc := connect(t, startNATS(t))
	ctx := testCtx(t)
	q, err := OpenClientQuotas(ctx, nc, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	alice := quota.Entity{User: quota.Named("alice")}
	def := quota.Entity{ClientID: quota.DefaultName()}
	set := func(e quota.Entity, k string, v float64) {
		t.Helper()
		if err := q.Alter(ctx, e, func(cur quota.Values) quota.Values { cur[k] = v; return cur }); err != nil {
			t.Fatal(err)
		}
	}
	set(alice, quota.KeyProducerByteRate, 1000)
	set(alice, quota.KeyConsumerByteRate, 2000)

	// A second handle (another node) watches: it sees what is there, then
	// each change.
	q2, err := OpenClientQuotas(ctx, nc, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer q2.Close()
	var mu sync.Mutex
	seen := map[quota.Entity]quota.Values{}
	if err := q2.Watch(ctx, func(e quota.Entity, v quota.Values) {
		mu.Lock()
		defer mu.Unlock()
		if v == nil {
			delete(seen, e)
		} else {
			seen[e] = v
		}
	}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if v := seen[alice]; len(v) != 2 || v[quota.KeyProducerByteRate] != 1000 || v[quota.KeyConsumerByteRate] != 2000 {
		t.Fatalf("initial watch: %v", seen)
	}
	mu.Unlock()
	set(def, quota.KeyRequestPercentage, 12.5)
	// Removing the last key deletes the entity.
	if err := q.Alter(ctx, alice, func(cur quota.Values) quota.Values {
		delete(cur, quota.KeyProducerByteRate)
		delete(cur, quota.KeyConsumerByteRate)
		return cur
	}); err != nil {
		t.Fatal(err)
	}
	if err := proctest.WaitFor(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		_, hasAlice := seen[alice]
		return !hasAlice && seen[def][quota.KeyRequestPercentage] == 12.5
	}); err != nil {
		t.Fatalf("the watch did not see the default and the deletion: %v", err)
	}
	all, err := q2.List(ctx)
	if err != nil || len(all) != 1 || all[def][quota.KeyRequestPercentage] != 12.5 {
		t.Fatalf("List: %v %v", all, err)
	}
	// Concurrent alterations of one entity both land.
	var wg sync.WaitGroup
	for i, k := range []string{quota.KeyProducerByteRate, quota.KeyConsumerByteRate, quota.KeyRemoteFetchByteRate} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := q
			if i%2 == 1 {
				h = q2
			}
			if err := h.Alter(ctx, def, func(cur quota.Values) quota.Values { cur[k] = float64(100 * (i + 1)); return cur }); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	all, err = q.List(ctx)
	if err != nil || len(all[def]) != 4 {
		t.Fatalf("after concurrent alters: %v %v", all, err)
	}
	if err := q.Alter(ctx, quota.Entity{}, func(v quota.Values) quota.Values { return v }); err == nil {
		t.Fatal("an empty entity was altered")
	}
}

// FuzzClientQuotaKey: any key read from the bucket parses or fails
// without panicking, and every entity survives its key.
func FuzzClientQuotaKey(f *testing.F) {
	for _, s := range []string{"user.NYWxpY2U", "client.=", "user.=.client.NYXBw", "user", "x.=.y.=", "user.N!!"} {
		f.Add(s, "alice", "app", uint8(0))
	}
	f.Fuzz(func(t *testing.T, key, user, client string, shape uint8) {
		_, _ = parseQuotaKey(key)
		var e quota.Entity
		switch shape % 4 {
		case 0:
			e.User = quota.Named(user)
		case 1:
			e.User, e.ClientID = quota.DefaultName(), quota.Named(client)
		case 2:
			e.User, e.ClientID = quota.Named(user), quota.DefaultName()
		default:
			e.ClientID = quota.Named(client)
		}
		got, err := parseQuotaKey(quotaKey(e))
		if err != nil || got != e {
			t.Fatalf("%v: key %q parsed %v %v", e, quotaKey(e), got, err)
		}
	})
}
