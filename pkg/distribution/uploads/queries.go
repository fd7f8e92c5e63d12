package uploads

import (
	"fmt"
	"time"
)

// DebugFileQuery finds a debug file by what crash tools know of a build. Zero fields are not
// compared; AppID 0 searches every app.
type DebugFileQuery struct {
	AppID                        int64
	DeviceType                   string
	ReleaseVersion, BuildVersion string
	// UUID is a Mach-O UUID (upper case) or a mapping file's UUID (lower case), as stored.
	UUID string
	// SHA256 and MD5 are checksums of the archive (hex, lower case).
	SHA256, MD5 string
}

// OpenSessions describes a token's open upload sessions (open or completing, not expired).
type OpenSessions struct {
	Count int
	// OldestID is the oldest one's id, NextExpiry when the first of them expires.
	OldestID   string
	NextExpiry time.Time
}

// TooManySessionsError is returned by CreateSession when the token already has its limit of open
// sessions; nothing was recorded.
type TooManySessionsError struct{ Open OpenSessions }

func (e *TooManySessionsError) Error() string {
	return fmt.Sprintf("the token has %d open upload sessions", e.Open.Count)
}
