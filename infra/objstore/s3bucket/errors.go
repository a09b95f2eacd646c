package s3bucket

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/smithy-go"

	"github.com/shale-io/shale/infra/objstore"
)

// errShortBody: a Put's reader ended before the declared size. Never
// transient: retrying cannot make the reader longer.
var errShortBody = errors.New("s3bucket: body shorter than its declared size")

var sdkRetryables = retry.IsErrorRetryables(retry.DefaultRetryables)

// translate maps an SDK error to objstore's vocabulary: ErrNotFound for a
// missing object, ErrTransient wrapped around what a retry may cure, and
// the error as it is otherwise.
func translate(op, key string, err error) error {
	if err == nil {
		return nil
	}
	status, code := httpStatus(err), apiCode(err)
	switch {
	case errors.Is(err, errShortBody), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("s3bucket: %s %q: %w", op, key, err)
	case code == "NoSuchKey" || code == "NotFound" || (status == 404 && code != "NoSuchBucket" && code != "NoSuchUpload"):
		return fmt.Errorf("s3bucket: %s %q: %w: %w", op, key, objstore.ErrNotFound, err)
	case status >= 500 || status == 429 || sdkRetryables.IsErrorRetryable(err) == aws.TrueTernary:
		return fmt.Errorf("s3bucket: %s %q: %w: %w", op, key, objstore.ErrTransient, err)
	}
	if _, isThrottle := retry.DefaultThrottleErrorCodes[code]; isThrottle {
		return fmt.Errorf("s3bucket: %s %q: %w: %w", op, key, objstore.ErrTransient, err)
	}
	return fmt.Errorf("s3bucket: %s %q: %w", op, key, err)
}

func httpStatus(err error) int {
	var re *awshttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}
