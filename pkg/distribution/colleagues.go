package distribution

import "time"

// Invitation is an open invitation of a colleague by email: to the console with a role (AppID 0),
// or to one app as its member (Role developer). Its link is mailed; it is spent once.
type Invitation struct {
	ID    int64
	Email string
	Role  string
	AppID int64
	// AppName is the app's name (AppID not 0); InvitedBy who invited, as the audit log names them.
	AppName   string
	InvitedBy string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// Mail kinds of colleagues (OutgoingMail.Kind).
const (
	MailColleagueInvitation = "colleague_invitation"
	MailColleagueSignIn     = "colleague_sign_in"
)

// InvitedSubject is the subject of a user who came by an invitation and has not signed in with the
// identity provider: their sign-ins are mailed links. The provider's first sign-in under the same
// verified email replaces it with the provider's subject (and mailed links stop).
func InvitedSubject(email string) string { return "email|" + email }
