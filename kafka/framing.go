package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Request header (v1, and v2 for flexible versions), after the 4-byte size:
//
//	api_key int16, api_version int16, correlation_id int32,
//	client_id nullable string (int16 length; never compact),
//	v2 only: tagged fields.
//
// minFrameSize is the smallest size prefix we read: enough for the key,
// version and correlation id, so that an answer can always be addressed.
const minFrameSize = 8

// decoded is one frame decoded against the registry. Exactly one of h and
// early is set: h serves req, or early is the answer already known
// (UNSUPPORTED_VERSION), in which case req.Msg is nil.
type decoded struct {
	req   Request
	h     Handler
	early kmsg.Response
}

// decodeFrame parses the request header and body of frame (the bytes after
// the size prefix). The decoded request may alias frame.
//
// It returns ErrMalformedRequest when the header or body do not decode,
// ErrUnknownAPIKey when nothing is registered for the key, and
// ErrUnsupportedVersion when the version is not served and no error response
// can be built for it.
func (r *Registry) decodeFrame(frame []byte) (decoded, error) {
	if len(frame) < minFrameSize {
		return decoded{}, fmt.Errorf("%w: %d-byte frame is shorter than a request header", ErrMalformedRequest, len(frame))
	}
	rd := kbin.Reader{Src: frame}
	d := decoded{req: Request{Key: rd.Int16(), Version: rd.Int16(), CorrelationID: rd.Int32()}}
	key, version := d.req.Key, d.req.Version
	if cid := rd.NullableString(); cid != nil {
		d.req.ClientID = *cid
	}
	if err := rd.Complete(); err != nil {
		return decoded{}, fmt.Errorf("%w: request header: %v", ErrMalformedRequest, err)
	}

	reg, ok := r.lookup(key)
	if !ok {
		return decoded{}, fmt.Errorf("%w: key %d (%s) version %d", ErrUnknownAPIKey, key, kmsg.NameForKey(key), version)
	}
	if version < reg.min || version > reg.max {
		early, err := r.unsupportedResponse(key, version)
		if err != nil {
			return decoded{}, err
		}
		d.early = early
		return d, nil
	}

	kreq := kmsg.RequestForKey(key)
	kreq.SetVersion(version)
	if kreq.IsFlexible() {
		kmsg.SkipTags(&rd)
		if err := rd.Complete(); err != nil {
			return decoded{}, fmt.Errorf("%w: request header tags: %v", ErrMalformedRequest, err)
		}
	}
	if err := kreq.ReadFrom(rd.Src); err != nil {
		return decoded{}, fmt.Errorf("%w: %s v%d body: %v", ErrMalformedRequest, kmsg.NameForKey(key), version, err)
	}
	d.req.Msg = kreq
	d.h = reg.h
	return d, nil
}

// responseHeaderFlexible reports whether a response of key at a version
// whose flexibility is flexible carries the response header's tag buffer
// (header v1). ApiVersions responses never do.
func responseHeaderFlexible(key int16, flexible bool) bool {
	return flexible && key != apiVersionsKey
}
