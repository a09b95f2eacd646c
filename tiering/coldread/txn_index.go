package coldread

import (
	"context"
	"fmt"

	"github.com/shale-io/shale/controlplane"
	"github.com/shale-io/shale/segment"
)

// txnList is a remote segment's parsed .txnindex.
type txnList []segment.AbortedTxn

func (l txnList) bytes() int64 { return int64(len(l))*segment.AbortedTxnSize + 64 }

// AbortedTxns returns the aborted transactions that overlap [from, upTo)
// according to the .txnindex objects of the partition's remote segments,
// as Kafka's RemoteLogManager collects them for a read_committed fetch:
// the segments from the one holding from on, each entry whose last offset
// is at or after from and whose first offset is below upTo, until an
// entry's last stable offset reaches upTo (complete). When complete is
// false the markers of some of those transactions may lie in local
// segments: the caller goes on there (segment.Log.AbortedTxns). A segment
// without a .txnindex object holds no marker of an aborted transaction.
// Errors wrap ErrRemoteRead (a .txnindex that cannot be read or parsed).
func (r *Reader) AbortedTxns(ctx context.Context, topic string, p int32, from, upTo int64) (txns []segment.AbortedTxn, complete bool, err error) {
	for _, s := range r.segments(topic, p) {
		if s.State != controlplane.CopyFinished || s.EndOffset < from {
			continue
		}
		list, err := r.txnIndexFor(ctx, s)
		if err != nil {
			r.stats.errors.Add(1)
			return nil, false, err
		}
		for _, a := range list {
			if a.LastOffset > s.EndOffset {
				break // its marker lies past the record's end (a fork's cut)
			}
			if a.LastOffset >= from && a.FirstOffset < upTo {
				txns = append(txns, a)
			}
			if a.LastStableOffset >= upTo {
				return txns, true, nil
			}
		}
	}
	return txns, false, nil
}

// txnIndexFor returns the segment's parsed .txnindex, nil when it has none.
func (r *Reader) txnIndexFor(ctx context.Context, s controlplane.RemoteSegment) (txnList, error) {
	key, err := objectKey(s, "txnindex")
	if err != nil {
		return nil, nil // no aborted transaction ends in this segment
	}
	return r.txnIdx.Get(ctx, key, func() (txnList, error) {
		b, err := r.getObject(ctx, key)
		if err != nil {
			return nil, err
		}
		list, err := segment.DecodeTxnIndex(b)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrRemoteRead, key, err)
		}
		objEnd, _ := s.ObjectBounds()
		for _, a := range list {
			if a.LastOffset < s.BaseOffset || a.LastOffset > objEnd {
				return nil, fmt.Errorf("%w: %s: marker at %d outside the segment [%d, %d]", ErrRemoteRead, key, a.LastOffset, s.BaseOffset, objEnd)
			}
		}
		return list, nil
	})
}
