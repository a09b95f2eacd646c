package admin

import (
	"github.com/shale-io/shale/kafkaerr"
)

// adminErrorCode is kafkaerr.Code, the node's one error table.
func adminErrorCode(err error) int16 { return kafkaerr.Code(err) }

func errMessage(err error) *string {
	if err == nil {
		return nil
	}
	s := err.Error()
	return &s
}
