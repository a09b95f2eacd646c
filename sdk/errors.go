package sdk

import "errors"

// Errors of the SDK. Errors from the broker are wrapped beside them, so both
// errors.Is(err, sdk.ErrTopicNotFound) and errors.Is(err,
// kerr.UnknownTopicOrPartition) hold.
var (
	// ErrInvalidOption is returned by a constructor given an option value
	// out of range, or no seeds.
	ErrInvalidOption = errors.New("sdk: invalid option")
	// ErrClosed is returned by calls on a closed Producer, Consumer or Admin.
	ErrClosed = errors.New("sdk: closed")
	// ErrBufferFull is returned by Producer.TrySend when the buffer (records
	// or bytes) is full.
	ErrBufferFull = errors.New("sdk: producer buffer full")
	// ErrTopicNotFound is returned when a topic does not exist.
	ErrTopicNotFound = errors.New("sdk: topic not found")
	// ErrTopicExists is returned by CreateTopic when the topic exists.
	ErrTopicExists = errors.New("sdk: topic already exists")
	// ErrGroupNotFound is returned when a consumer group does not exist.
	ErrGroupNotFound = errors.New("sdk: group not found")
	// ErrGroupNotEmpty is returned when a group operation needs an empty
	// group (delete, reset offsets) and the group has members.
	ErrGroupNotEmpty = errors.New("sdk: group not empty")
	// ErrNoAdminURL is returned by TierStatus when no admin URL was given.
	ErrNoAdminURL = errors.New("sdk: no admin URL (WithAdminURL)")
	// ErrAdminHTTP is returned when the node's admin endpoint answers with
	// a status other than 200.
	ErrAdminHTTP = errors.New("sdk: admin HTTP error")
	// ErrInvalidRange is returned by Replay when from is after to, or a
	// position is not usable as a bound.
	ErrInvalidRange = errors.New("sdk: invalid replay range")
	// ErrInvalidPosition is returned by ParsePosition for text that is no
	// position.
	ErrInvalidPosition = errors.New("sdk: invalid position")
	// ErrPartitionNotFound is returned when a named partition of a topic
	// does not exist.
	ErrPartitionNotFound = errors.New("sdk: partition not found")
	// ErrNoSubscription is returned by Poll and Seek on a consumer made
	// without WithGroup, WithTopics or WithAssignment: it is for Replay.
	ErrNoSubscription = errors.New("sdk: consumer reads nothing through Poll (no WithTopics, WithGroup or WithAssignment); it is for Replay")
	// ErrNoGroup is returned by Commit on a consumer without a group.
	ErrNoGroup = errors.New("sdk: consumer has no group")
	// ErrNotAssigned is returned by a seek on a partition the consumer does
	// not own (group mode).
	ErrNotAssigned = errors.New("sdk: partition not assigned")
)
