package s3bucket

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// MinPartSize is S3's smallest multipart part (all but the last).
const MinPartSize = 5 << 20

// Config selects and tunes an S3 bucket. Credentials come from the standard
// AWS chain (environment, shared files, instance roles) unless Credentials
// is set.
type Config struct {
	// Endpoint is the service URL, e.g. http://127.0.0.1:7070; empty means
	// AWS's own endpoint for Region.
	Endpoint string `yaml:"endpoint"`
	// Bucket is the bucket's name. Required.
	Bucket string `yaml:"bucket"`
	// Region defaults to us-east-1.
	Region string `yaml:"region"`
	// Prefix is prepended to every key (a "/" is added if missing), so
	// several clusters can share a bucket.
	Prefix string `yaml:"prefix"`
	// PathStyle addresses http://endpoint/bucket/key rather than
	// http://bucket.endpoint/key: MinIO, versitygw and most S3-compatible
	// stores want it.
	PathStyle bool `yaml:"path_style"`
	// PartSize: objects larger than this go up in multipart uploads of
	// parts this big. Default 16 MiB, at least MinPartSize.
	PartSize int64 `yaml:"part_size"`
	// Concurrency is the number of parts of one object uploaded at once.
	// Default 4.
	Concurrency int `yaml:"concurrency"`
	// Credentials, when set, replaces the standard chain (tests use static
	// credentials).
	Credentials aws.CredentialsProvider `yaml:"-"`
}

// Defaults fills unset fields.
func (c *Config) Defaults() {
	if c.Region == "" {
		c.Region = "us-east-1"
	}
	if c.PartSize == 0 {
		c.PartSize = 16 << 20
	}
	if c.Concurrency == 0 {
		c.Concurrency = 4
	}
	if c.Prefix != "" && !strings.HasSuffix(c.Prefix, "/") {
		c.Prefix += "/"
	}
}

// ErrConfig: an invalid Config.
var ErrConfig = errors.New("s3bucket: invalid config")

// Validate checks a defaulted Config.
func (c *Config) Validate() error {
	switch {
	case c.Bucket == "":
		return fmt.Errorf("%w: bucket is required", ErrConfig)
	case c.PartSize < MinPartSize:
		return fmt.Errorf("%w: part size %d is below S3's minimum %d", ErrConfig, c.PartSize, MinPartSize)
	case c.Concurrency < 1:
		return fmt.Errorf("%w: concurrency %d", ErrConfig, c.Concurrency)
	case strings.HasPrefix(c.Prefix, "/"):
		return fmt.Errorf("%w: prefix %q starts with a slash", ErrConfig, c.Prefix)
	}
	return nil
}
