package clientmetrics

import (
	"errors"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name    string
		configs map[string]string
		want    error
	}{
		{"ok", map[string]string{"metrics": "org.apache.kafka.producer., org.apache.kafka.consumer.", "interval.ms": "1000", "match": "client_software_name=librdkafka,client_id=app-.*"}, nil},
		{"defaults", map[string]string{}, nil},
		{"unknown config", map[string]string{"metric": "x"}, ErrInvalidRequest},
		{"interval too small", map[string]string{"interval.ms": "99"}, ErrInvalidRequest},
		{"interval too large", map[string]string{"interval.ms": "3600001"}, ErrInvalidRequest},
		{"interval not a number", map[string]string{"interval.ms": "soon"}, ErrInvalidConfig},
		{"match without =", map[string]string{"match": "client_id"}, ErrInvalidConfig},
		{"match with two =", map[string]string{"match": "client_id=a=b"}, ErrInvalidConfig},
		{"match of an unknown key", map[string]string{"match": "principal=bob"}, ErrInvalidConfig},
		{"match of a bad expression", map[string]string{"match": "client_id=("}, ErrInvalidConfig},
	} {
		_, err := Parse("sub", tc.configs)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Parse: %v, want %v", tc.name, err, tc.want)
		}
	}
	if _, err := Parse("", nil); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("empty name: %v", err)
	}
}

func mustParse(t *testing.T, name string, c map[string]string) Subscription {
	t.Helper()
	s, err := Parse(name, c)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCombine(t *testing.T) {
	producer := mustParse(t, "producer", map[string]string{"metrics": "org.apache.kafka.producer.", "interval.ms": "2000",
		"match": "client_software_name=librdkafka"})
	fast := mustParse(t, "fast", map[string]string{"metrics": "org.apache.kafka.producer.,org.apache.kafka.client.", "interval.ms": "500",
		"match": "client_id=app-.*"})
	all := mustParse(t, "all", map[string]string{"metrics": "*", "match": "client_id=debug"})
	subs := []Subscription{producer, fast, all}

	rd := Client{MatchClientSoftwareName: "librdkafka", MatchClientID: "app-1"}
	got := Combine(subs, rd)
	if want := []string{"org.apache.kafka.client.", "org.apache.kafka.producer."}; !slices.Equal(got.Metrics, want) || got.IntervalMs != 500 {
		t.Errorf("librdkafka app-1: %+v", got)
	}
	// The selector matches the whole value, as Java's Pattern.matches.
	if got := Combine(subs, Client{MatchClientSoftwareName: "librdkafka-fork", MatchClientID: "x-app-1"}); len(got.Metrics) != 0 || got.IntervalMs != DefaultInterval {
		t.Errorf("no match: %+v", got)
	}
	if got := Combine(subs, Client{MatchClientID: "debug", MatchClientSoftwareName: "librdkafka"}); !slices.Equal(got.Metrics, []string{AllMetrics}) || got.IntervalMs != 2000 {
		t.Errorf("all: %+v", got)
	}
	// The id follows the subscription and the client.
	a, b := [16]byte{1}, [16]byte{2}
	c2 := Combine(subs[:1], rd)
	if got.SubscriptionID(a) == got.SubscriptionID(b) || got.SubscriptionID(a) == c2.SubscriptionID(a) || got.SubscriptionID(a) != Combine(subs, rd).SubscriptionID(a) {
		t.Error("subscription ids do not tell subscriptions and clients apart, or are not stable")
	}
}
