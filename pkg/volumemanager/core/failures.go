package core

import (
	"errors"
	"fmt"
)

// Cause is why a volume could not be set up, classified once, where the
// failure happens, so that whoever waits for the volume (a pod's sync, a
// CSI publish call) can act on it without reading anything again.
type Cause int

const (
	// CauseUnknown is an error the executor did not classify.
	CauseUnknown Cause = iota
	// CauseObjectNotFound: a ConfigMap or Secret the volume requires does
	// not exist.
	CauseObjectNotFound
	// CauseNotReadable: an object cannot be read yet (the apiserver is
	// down, a watch has not listed it): a retry may succeed unchanged.
	CauseNotReadable
	// CauseKeyMissing: an object lacks a key that the volume's items name.
	CauseKeyMissing
	// CauseInvalidPayload: the files the volume asks for cannot be
	// written as asked (a path outside the volume, or over the writer's).
	CauseInvalidPayload
	// CauseDisk: writing the files failed (a full disk, permissions).
	CauseDisk
)

var causeNames = [...]string{"unknown", "object not found", "not readable yet", "key missing", "invalid payload", "disk"}

func (c Cause) String() string {
	if c < 0 || int(c) >= len(causeNames) {
		return fmt.Sprintf("Cause(%d)", int(c))
	}
	return causeNames[c]
}

// VolumeError is a failure to set up a volume, with its cause. The
// reconciler keeps it as it is (reconciler.Failure.Err), so CauseOf finds
// the cause however far the error travelled.
type VolumeError struct {
	Cause Cause
	Err   error
}

func (e *VolumeError) Error() string { return e.Err.Error() }
func (e *VolumeError) Unwrap() error { return e.Err }

// failure wraps err with cause; nil stays nil.
func failure(cause Cause, err error) error {
	if err == nil {
		return nil
	}
	return &VolumeError{Cause: cause, Err: err}
}

// CauseOf returns the cause of err, or CauseUnknown. Of a projected
// volume's joined errors it returns the first source's.
func CauseOf(err error) Cause {
	var ve *VolumeError
	if errors.As(err, &ve) {
		return ve.Cause
	}
	return CauseUnknown
}
