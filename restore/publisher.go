package restore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/infra/objstore"
)

// Publisher writes what a restore needs beside the segments: the format
// marker of FormatVersion (once) and a descriptor of each tiered topic
// whenever its partition count, replication factor or configs change.
// The controller node runs it (PublishOnce on each tiering pass); two
// nodes running it at once only write a descriptor twice. Descriptors of
// deleted topics stay: they are what brings such a topic back.
//
// A Publisher is used by one goroutine at a time.
type Publisher struct {
	bucket objstore.Bucket
	prefix string
	topics func() []controlplane.Topic
	tiered func(controlplane.Topic) bool
	now    func() time.Time
	log    *slog.Logger
	by     string

	marked bool
	// last holds, by topic id, the descriptor known to be the newest in
	// the bucket (read from it the first time the topic is seen).
	last map[controlplane.TopicID]TopicDescriptor
}

// PublisherConfig is what NewPublisher is built from.
type PublisherConfig struct {
	Bucket objstore.Bucket
	Prefix string // the nodes' s3_prefix
	// Topics lists the cluster's topics; Tiered says which are tiered
	// (remote.storage.enable as resolved with the broker defaults).
	Topics func() []controlplane.Topic
	Tiered func(controlplane.Topic) bool
	// WrittenBy names the writer in the format marker ("shale <version>").
	WrittenBy string
	Logger    *slog.Logger
	Now       func() time.Time // time.Now when nil
}

// NewPublisher returns a Publisher that has written nothing yet.
func NewPublisher(cfg PublisherConfig) *Publisher {
	p := &Publisher{bucket: cfg.Bucket, prefix: cfg.Prefix, topics: cfg.Topics, tiered: cfg.Tiered, now: cfg.Now,
		log: cfg.Logger, by: cfg.WrittenBy, last: map[controlplane.TopicID]TopicDescriptor{}}
	if p.now == nil {
		p.now = time.Now
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p
}

// PublishOnce writes the format marker if the bucket has none of this
// version, and a descriptor of each tiered topic whose newest one differs.
// It returns the first error, after trying every topic.
func (p *Publisher) PublishOnce(ctx context.Context) error {
	var errs []error
	if !p.marked {
		if err := p.mark(ctx); err != nil {
			errs = append(errs, err)
		} else {
			p.marked = true
		}
	}
	seen := map[controlplane.TopicID]bool{}
	for _, t := range p.topics() {
		if !p.tiered(t) {
			continue
		}
		seen[t.ID] = true
		if err := p.publishTopic(ctx, t); err != nil {
			errs = append(errs, err)
		}
	}
	for id := range p.last {
		if !seen[id] {
			delete(p.last, id) // deleted or no longer tiered: read again if it comes back
		}
	}
	return errors.Join(errs...)
}

func (p *Publisher) mark(ctx context.Context) error {
	key := FormatMarkerKey(p.prefix, FormatVersion)
	_, err := p.bucket.Stat(ctx, key)
	if err == nil {
		return nil
	}
	if !errors.Is(err, objstore.ErrNotFound) {
		return fmt.Errorf("restore: stat %s: %w", key, err)
	}
	b := EncodeFormatMarker(FormatMarker{FormatVersion: FormatVersion, WrittenBy: p.by, CreatedAt: p.now().UTC()})
	if err := p.bucket.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("restore: put %s: %w", key, err)
	}
	p.log.Info("wrote the bucket format marker", "key", key, "format_version", FormatVersion)
	return nil
}

func (p *Publisher) publishTopic(ctx context.Context, t controlplane.Topic) error {
	d := DescriptorFor(t, p.now())
	last, ok := p.last[t.ID]
	if !ok {
		newest, found, err := NewestDescriptor(ctx, p.bucket, p.prefix, t.Name, t.ID)
		if err != nil {
			return err
		}
		if found {
			last, ok = newest, true
			p.last[t.ID] = newest
		}
	}
	if ok && last.sameTopic(d) {
		return nil
	}
	key := DescriptorKey(p.prefix, t.Name, t.ID, d.CreatedAt)
	b := EncodeDescriptor(d)
	if err := p.bucket.Put(ctx, key, bytes.NewReader(b), int64(len(b))); err != nil {
		return fmt.Errorf("restore: put %s: %w", key, err)
	}
	p.last[t.ID] = d
	p.log.Info("wrote a topic descriptor to the bucket", "topic", t.Name, "key", key)
	return nil
}

// maxMetaObject bounds a format marker, descriptor or manifest read whole.
const maxMetaObject = 1 << 20

// NewestDescriptor reads the newest descriptor of topic (name, id) from
// the bucket; found is false when there is none.
func NewestDescriptor(ctx context.Context, b objstore.Bucket, prefix, name string, id controlplane.TopicID) (d TopicDescriptor, found bool, err error) {
	var newest string
	if err := b.List(ctx, DescriptorPrefix(prefix, name, id), func(a objstore.Attrs) error {
		newest = a.Key // lexical order: the newest lists last
		return nil
	}); err != nil {
		return TopicDescriptor{}, false, fmt.Errorf("restore: list descriptors of %s: %w", name, err)
	}
	if newest == "" {
		return TopicDescriptor{}, false, nil
	}
	data, err := readSmall(ctx, b, newest)
	if err != nil {
		return TopicDescriptor{}, false, err
	}
	d, err = DecodeDescriptor(data)
	if err != nil {
		return TopicDescriptor{}, false, fmt.Errorf("%s: %w", newest, err)
	}
	return d, true, nil
}

// readSmall reads a whole object of at most maxMetaObject bytes.
func readSmall(ctx context.Context, b objstore.Bucket, key string) ([]byte, error) {
	return readLimited(ctx, b, key, maxMetaObject)
}

func readLimited(ctx context.Context, b objstore.Bucket, key string, limit int64) ([]byte, error) {
	rc, err := b.GetRange(ctx, key, 0, -1)
	if err != nil {
		return nil, fmt.Errorf("restore: read %s: %w", key, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, fmt.Errorf("restore: read %s: %w", key, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("restore: %s is larger than %d bytes", key, limit)
	}
	return data, nil
}
