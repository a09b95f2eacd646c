package kafka

import (
	"fmt"
	"reflect"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// unsupportedResponse builds the answer to a registered key at a version
// outside its registered range.
//
// ApiVersions answers at v0 (see api_versions.go). Any other key is answered
// at the requested version with UNSUPPORTED_VERSION in the response's
// top-level ErrorCode, when kmsg can encode that version and the response
// has a top-level ErrorCode at that version. Otherwise (Produce, Metadata, or a version newer
// than kmsg knows) there is no way to say it, and the connection is closed
// with ErrUnsupportedVersion, as Kafka does for a request it cannot parse.
func (r *Registry) unsupportedResponse(key, version int16) (kmsg.Response, error) {
	if key == apiVersionsKey {
		return r.unsupportedApiVersions(), nil
	}
	resp := kmsg.ResponseForKey(key)
	if resp == nil || version < 0 || version > resp.MaxVersion() {
		return nil, fmt.Errorf("%w: %s v%d", ErrUnsupportedVersion, kmsg.NameForKey(key), version)
	}
	if d, ok := resp.(interface{ Default() }); ok {
		d.Default()
	}
	resp.SetVersion(version)
	field := reflect.ValueOf(resp).Elem().FieldByName("ErrorCode")
	if !field.IsValid() || field.Kind() != reflect.Int16 || !field.CanSet() {
		return nil, fmt.Errorf("%w: %s v%d (its response has no top-level error code)", ErrUnsupportedVersion, kmsg.NameForKey(key), version)
	}
	// A field that exists in the struct may not exist at this version
	// (Fetch has ErrorCode from v7): only an error code that changes the
	// encoding reaches the client.
	without := resp.AppendTo(nil)
	field.SetInt(int64(kerr.UnsupportedVersion.Code))
	if string(without) == string(resp.AppendTo(nil)) {
		return nil, fmt.Errorf("%w: %s v%d (its response has no error code at this version)", ErrUnsupportedVersion, kmsg.NameForKey(key), version)
	}
	return resp, nil
}
