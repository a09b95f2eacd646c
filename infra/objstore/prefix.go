package objstore

import (
	"context"
	"fmt"
	"io"
	"strings"
)

// WithPrefix wraps b so that every key is stored under prefix: key k is
// b's key prefix+"/"+k, and List reports keys with the prefix removed. A
// trailing slash on prefix is optional. The prefix must itself be a valid
// key; WithPrefix panics otherwise, as that is a programming error.
func WithPrefix(b Bucket, prefix string) Bucket {
	prefix = strings.TrimSuffix(prefix, "/")
	if err := ValidateKey(prefix); err != nil {
		panic(fmt.Sprintf("objstore.WithPrefix: %v", err))
	}
	return &prefixed{b: b, prefix: prefix + "/"}
}

type prefixed struct {
	b      Bucket
	prefix string
}

// key validates k before prefixing, so that an invalid key ("", "/x")
// cannot become a valid one under the prefix.
func (p *prefixed) key(k string) (string, error) {
	if err := ValidateKey(k); err != nil {
		return "", err
	}
	return p.prefix + k, nil
}

func (p *prefixed) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	k, err := p.key(key)
	if err != nil {
		return err
	}
	return p.b.Put(ctx, k, r, size)
}

func (p *prefixed) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	k, err := p.key(key)
	if err != nil {
		return nil, err
	}
	return p.b.GetRange(ctx, k, offset, length)
}

func (p *prefixed) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	return p.b.List(ctx, p.prefix+prefix, func(a Attrs) error {
		a.Key = strings.TrimPrefix(a.Key, p.prefix)
		return fn(a)
	})
}

func (p *prefixed) Stat(ctx context.Context, key string) (Attrs, error) {
	k, err := p.key(key)
	if err != nil {
		return Attrs{}, err
	}
	a, err := p.b.Stat(ctx, k)
	if err != nil {
		return Attrs{}, err
	}
	a.Key = key
	return a, nil
}

func (p *prefixed) Delete(ctx context.Context, key string) error {
	k, err := p.key(key)
	if err != nil {
		return err
	}
	return p.b.Delete(ctx, k)
}

func (p *prefixed) Close() error { return p.b.Close() }
