package adminapi_test

import (
	"bytes"
	"errors"
	"testing"

	"github.com/shale-io/shale/adminapi"
)

const wireQuarantine = `{"entries":[{"topic":"events","topic_id":"00112233445566778899aabbccddeeff","partition":0,
"id":"54941bfbd036c0a1cdfd51cd3153ca54","reason":"retention","state":"quarantined","base_offset":0,"end_offset":50,
"bytes":4000,"objects":6,"quarantined_at":"2026-12-05T08:24:09Z","purge_after":"2026-12-06T08:24:09Z"}]}`

// FuzzDecodeQuarantine: any body decodes to a list of entries or an
// ErrBadBody.
func FuzzDecodeQuarantine(f *testing.F) {
	f.Add([]byte(wireQuarantine))
	f.Add([]byte(`{"entries":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := adminapi.DecodeQuarantine(bytes.NewReader(b))
		if err != nil && !errors.Is(err, adminapi.ErrBadBody) {
			t.Fatalf("error %v does not wrap ErrBadBody", err)
		}
		if err == nil && q.Entries == nil {
			t.Fatal("decoded without an entries list")
		}
	})
}

func TestDecodeQuarantine(t *testing.T) {
	q, err := adminapi.DecodeQuarantine(bytes.NewReader([]byte(wireQuarantine)))
	if err != nil || len(q.Entries) != 1 || q.Entries[0].EndOffset != 50 || q.Entries[0].Reason != "retention" {
		t.Fatalf("%+v %v", q, err)
	}
	if _, err := adminapi.DecodeQuarantine(bytes.NewReader([]byte(`{}`))); !errors.Is(err, adminapi.ErrBadBody) {
		t.Fatalf("no entries list: %v", err)
	}
}
