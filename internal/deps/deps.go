// Package deps pins the module's third-party dependencies in go.mod until the
// packages that use them import them directly. It is deleted once they do.
package deps

import (
	_ "github.com/IBM/sarama"
	_ "github.com/klauspost/compress/gzip"
	_ "github.com/klauspost/compress/s2"
	_ "github.com/klauspost/compress/snappy"
	_ "github.com/klauspost/compress/zstd"
	_ "github.com/nats-io/nats-server/v2/server"
	_ "github.com/nats-io/nats.go"
	_ "github.com/nats-io/nats.go/jetstream"
	_ "github.com/pierrec/lz4/v4"
	_ "github.com/segmentio/kafka-go"
	_ "github.com/twmb/franz-go/pkg/kadm"
	_ "github.com/twmb/franz-go/pkg/kerr"
	_ "github.com/twmb/franz-go/pkg/kfake"
	_ "github.com/twmb/franz-go/pkg/kgo"
	_ "github.com/twmb/franz-go/pkg/kmsg"
	_ "go.yaml.in/yaml/v3"
	_ "golang.org/x/sync/errgroup"
	_ "golang.org/x/sys/unix"
)
