package quota

import (
	"errors"
	"fmt"
)

// ErrInvalid: an entity or a quota value that Kafka would refuse
// (INVALID_REQUEST at the protocol edge).
var ErrInvalid = errors.New("quota: invalid")

func errorf(format string, args ...any) error {
	return fmt.Errorf("quota: "+format, args...)
}
