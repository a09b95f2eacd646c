// Package s3bucket is an objstore.Bucket on Amazon S3 or any S3-compatible
// store (MinIO, versitygw, Ceph RGW), through aws-sdk-go-v2.
//
// The SDK's own retries are off: every request is made once, and its error
// is translated (ErrNotFound for a missing object, objstore.ErrTransient
// around 5xx, throttling, timeouts and broken connections) so that
// objstore.WithRetries decides. A retried multipart Put starts again from
// the first part. Request checksums are computed only when an operation
// requires them, which keeps older S3-compatible stores working.
package s3bucket

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/feature/s3/manager"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/shale-io/shale/infra/objstore"
)

// Bucket is an objstore.Bucket on one S3 bucket (and optional key prefix).
// It is safe for concurrent use.
type Bucket struct {
	cfg    Config
	client *s3.Client
	//lint:ignore SA1019 manager.Uploader still does multipart uploads; moving to transfermanager is a later change
	uploader *manager.Uploader
	idle     interface{ CloseIdleConnections() } // nil if the HTTP client has none
}

var _ objstore.Bucket = (*Bucket)(nil)

// New builds a client for cfg (defaulted and validated). It does no I/O:
// a wrong endpoint, bucket or credential shows on the first request.
func New(ctx context.Context, cfg Config) (*Bucket, error) {
	cfg.Defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	opts := []func(*config.LoadOptions) error{
		config.WithRegion(cfg.Region),
		config.WithRetryer(func() aws.Retryer { return aws.NopRetryer{} }),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) {
			tr.MaxIdleConnsPerHost = 64
		})),
		config.WithRequestChecksumCalculation(aws.RequestChecksumCalculationWhenRequired),
		config.WithResponseChecksumValidation(aws.ResponseChecksumValidationWhenRequired),
	}
	if cfg.Credentials != nil {
		opts = append(opts, config.WithCredentialsProvider(cfg.Credentials))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("s3bucket: aws config: %w", err)
	}
	// Freeze the client the config built (it may carry AWS_CA_BUNDLE's
	// roots) so that Close can drop its idle connections.
	if bc, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		awsCfg.HTTPClient = bc.Freeze()
	}
	idle, _ := awsCfg.HTTPClient.(interface{ CloseIdleConnections() })
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
	})
	//lint:ignore SA1019 manager.Uploader still does multipart uploads; moving to transfermanager is a later change
	uploader := manager.NewUploader(client, func(u *manager.Uploader) {
		u.PartSize = cfg.PartSize
		u.Concurrency = cfg.Concurrency
	})
	return &Bucket{cfg: cfg, client: client, uploader: uploader, idle: idle}, nil
}

// Client returns the underlying SDK client, for tests and administration.
func (b *Bucket) Client() *s3.Client { return b.client }

func (b *Bucket) objectKey(key string) (string, error) {
	if err := objstore.ValidateKey(key); err != nil {
		return "", err
	}
	return b.cfg.Prefix + key, nil
}

// Put uploads size bytes from r. Readers that are both io.ReaderAt and
// io.Seeker (*os.File, *io.SectionReader, *bytes.Reader) are uploaded from
// their current position without copying, and a body shorter than size is
// refused before any request; other readers are buffered a part at a time
// (PartSize × Concurrency bytes at most). Objects above PartSize go up in a
// multipart upload, which the SDK aborts when a part fails.
func (b *Bucket) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	okey, err := b.objectKey(key)
	if err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("s3bucket: put %q: negative size %d", key, size)
	}
	body, err := exactBody(r, size)
	if err != nil {
		return fmt.Errorf("s3bucket: put %q: %w", key, err)
	}
	//lint:ignore SA1019 manager.Uploader still does multipart uploads; moving to transfermanager is a later change
	_, err = b.uploader.Upload(ctx, &s3.PutObjectInput{
		Bucket: aws.String(b.cfg.Bucket),
		Key:    aws.String(okey),
		Body:   body,
	})
	return translate("put", key, err)
}

// exactBody returns a reader of exactly size bytes of r, or errShortBody.
func exactBody(r io.Reader, size int64) (io.Reader, error) {
	type readAtSeeker interface {
		io.ReaderAt
		io.Seeker
	}
	if rs, ok := r.(readAtSeeker); ok {
		cur, err := rs.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, err
		}
		end, err := rs.Seek(0, io.SeekEnd)
		if err != nil {
			return nil, err
		}
		if _, err := rs.Seek(cur, io.SeekStart); err != nil {
			return nil, err
		}
		if end-cur < size {
			return nil, fmt.Errorf("%w: %d bytes left, %d declared", errShortBody, end-cur, size)
		}
		return io.NewSectionReader(rs, cur, size), nil
	}
	return &exactReader{r: r, left: size}, nil
}

// exactReader yields at most left bytes and fails with errShortBody if r
// ends first.
type exactReader struct {
	r    io.Reader
	left int64
}

func (e *exactReader) Read(p []byte) (int, error) {
	if e.left <= 0 {
		return 0, io.EOF
	}
	if int64(len(p)) > e.left {
		p = p[:e.left]
	}
	n, err := e.r.Read(p)
	e.left -= int64(n)
	if errors.Is(err, io.EOF) {
		if e.left > 0 {
			return n, fmt.Errorf("%w: %d bytes missing", errShortBody, e.left)
		}
		err = nil
	}
	return n, err
}

// GetRange reads a range with one ranged GET (see objstore.Bucket for the
// range contract). S3 answers 416 for a range starting at or past the end;
// GetRange then asks for the size to tell offset == size (an empty read)
// from an invalid range.
func (b *Bucket) GetRange(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	okey, err := b.objectKey(key)
	if err != nil {
		return nil, err
	}
	if offset < 0 || length < -1 {
		return nil, fmt.Errorf("s3bucket: get %q: %w: offset %d length %d", key, objstore.ErrInvalidRange, offset, length)
	}
	if length == 0 {
		return b.emptyRead(ctx, key, offset, length)
	}
	in := &s3.GetObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String(okey)}
	switch {
	case length > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", offset, offset+length-1))
	case offset > 0:
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", offset))
	}
	out, err := b.client.GetObject(ctx, in)
	if err != nil {
		if httpStatus(err) == http.StatusRequestedRangeNotSatisfiable || apiCode(err) == "InvalidRange" {
			return b.emptyRead(ctx, key, offset, length)
		}
		return nil, translate("get", key, err)
	}
	return out.Body, nil
}

// emptyRead stats key and returns an empty reader if the range is valid
// and yields nothing, else ErrInvalidRange or ErrNotFound.
func (b *Bucket) emptyRead(ctx context.Context, key string, offset, length int64) (io.ReadCloser, error) {
	a, err := b.Stat(ctx, key)
	if err != nil {
		return nil, err
	}
	n, err := objstore.CheckRange(a.Size, offset, length)
	if err != nil {
		return nil, fmt.Errorf("s3bucket: get %q: %w", key, err)
	}
	if n != 0 {
		// The server refused a range the size says is readable.
		return nil, fmt.Errorf("s3bucket: get %q: %w: server refused %d bytes at %d of %d", key, objstore.ErrTransient, n, offset, a.Size)
	}
	return io.NopCloser(strings.NewReader("")), nil
}

// Stat issues a HEAD request.
func (b *Bucket) Stat(ctx context.Context, key string) (objstore.Attrs, error) {
	okey, err := b.objectKey(key)
	if err != nil {
		return objstore.Attrs{}, err
	}
	out, err := b.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String(okey)})
	if err != nil {
		return objstore.Attrs{}, translate("stat", key, err)
	}
	return objstore.Attrs{Key: key, Size: aws.ToInt64(out.ContentLength), LastModified: aws.ToTime(out.LastModified)}, nil
}

// Delete issues a DELETE; a missing key is not an error.
func (b *Bucket) Delete(ctx context.Context, key string) error {
	okey, err := b.objectKey(key)
	if err != nil {
		return err
	}
	_, err = b.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b.cfg.Bucket), Key: aws.String(okey)})
	err = translate("delete", key, err)
	if errors.Is(err, objstore.ErrNotFound) {
		return nil
	}
	return err
}

// List pages through ListObjectsV2 (1000 keys a page). A failed page fails
// the listing after fn has seen the pages before it.
func (b *Bucket) List(ctx context.Context, prefix string, fn func(objstore.Attrs) error) error {
	p := s3.NewListObjectsV2Paginator(b.client, &s3.ListObjectsV2Input{
		Bucket: aws.String(b.cfg.Bucket),
		Prefix: aws.String(b.cfg.Prefix + prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return translate("list", prefix, err)
		}
		for _, o := range page.Contents {
			key := strings.TrimPrefix(aws.ToString(o.Key), b.cfg.Prefix)
			if err := fn(objstore.Attrs{Key: key, Size: aws.ToInt64(o.Size), LastModified: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// AbortIncompleteMultipartUploads aborts the multipart uploads under the
// bucket's prefix that were initiated more than olderThan ago (abandoned
// by a crashed writer; they cost storage until aborted) and whose key keep
// (when not nil) does not claim, and returns how many it aborted. Uploads
// it cannot abort are reported in the error after the rest are tried. It
// implements objstore.UploadAborter.
func (b *Bucket) AbortIncompleteMultipartUploads(ctx context.Context, olderThan time.Duration, keep func(key string) bool) (int, error) {
	cutoff := time.Now().Add(-olderThan)
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(b.cfg.Bucket)}
	if b.cfg.Prefix != "" {
		in.Prefix = aws.String(b.cfg.Prefix)
	}
	aborted := 0
	var errs []error
	for {
		out, err := b.client.ListMultipartUploads(ctx, in)
		if err != nil {
			return aborted, translate("list multipart uploads", b.cfg.Prefix, err)
		}
		for _, u := range out.Uploads {
			if u.Initiated != nil && u.Initiated.After(cutoff) || keep != nil && keep(aws.ToString(u.Key)) {
				continue
			}
			_, err := b.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{
				Bucket: aws.String(b.cfg.Bucket), Key: u.Key, UploadId: u.UploadId,
			})
			if err != nil && apiCode(err) != "NoSuchUpload" {
				errs = append(errs, translate("abort multipart upload", aws.ToString(u.Key), err))
				continue
			}
			aborted++
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	return aborted, errors.Join(errs...)
}

// Close drops idle connections. It is idempotent; the Bucket must not be
// used afterwards.
func (b *Bucket) Close() error {
	if b.idle != nil {
		b.idle.CloseIdleConnections()
	}
	return nil
}
