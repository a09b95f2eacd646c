package proctest

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Client returns a franz-go client whose only seed is this node's Kafka
// address, with no request retries (a question to this node is answered by
// this node or fails). It is made on first use, shared by later calls, and
// closed when the run ends (Kill, Stop, WaitExit) and at the end of the
// test; the caller must not close it.
func (n *Node) Client() *kgo.Client {
	n.t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.mu.cl == nil {
		cl, err := kgo.NewClient(kgo.SeedBrokers(n.kafka), kgo.RequestRetries(0), kgo.RetryTimeout(time.Second))
		if err != nil {
			n.t.Fatalf("%s: %v", n.name, err)
		}
		n.mu.cl = cl
	}
	return n.mu.cl
}

// Metadata asks this node (and no other) for the cluster's metadata, and
// for the given topics' partitions.
func (n *Node) Metadata(ctx context.Context, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range topics {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	seeds := n.Client().SeedBrokers()
	if len(seeds) == 0 {
		return nil, fmt.Errorf("%s: no seed broker", n.name)
	}
	resp, err := seeds[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// Requester sends a Kafka request: a *kgo.Client or a *kgo.Broker.
type Requester interface {
	Request(ctx context.Context, req kmsg.Request) (kmsg.Response, error)
}

// TopicID asks r (Metadata) for topic's id. A raw Produce (v13) or Fetch
// (v13+) names its topics by id (KIP-516), and franz-go fills in no id for
// a request built by hand: set both Topic and TopicID, and the request
// works at any version.
func TopicID(ctx context.Context, r Requester, topic string) ([16]byte, error) {
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := r.Request(ctx, req)
	if err != nil {
		return [16]byte{}, err
	}
	for _, t := range resp.(*kmsg.MetadataResponse).Topics {
		if t.Topic != nil && *t.Topic == topic {
			if t.ErrorCode != 0 || t.TopicID == ([16]byte{}) {
				return [16]byte{}, fmt.Errorf("topic %s: error %d, id %x", topic, t.ErrorCode, t.TopicID)
			}
			return t.TopicID, nil
		}
	}
	return [16]byte{}, fmt.Errorf("topic %s: not in the metadata answer", topic)
}
