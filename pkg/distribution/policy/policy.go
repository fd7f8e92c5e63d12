// Package policy decides who may do what, once, for every edge: the API, the console, the
// release pages and the command line. A request's actor (an API token, a console user, the
// system) travels in its context (distribution.WithActor); a use case asks Authorize whether that
// actor may take an action on a resource before it changes or reveals anything. Nothing else
// checks roles or scopes.
//
// The rules are one table (Decide), so that a new kind of actor, or a new action, is one more
// row, and the table test lists every actor × action.
package policy

import (
	"context"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// Action is something an actor may be allowed to do.
type Action string

// The actions. An action on one app takes a resource naming the app (OnApp); the others act on
// the installation as a whole (Installation).
const (
	// ReadCatalog reads apps, schemes, channels, releases and what is recorded of them (insights,
	// retention policies and plans, debug files, members).
	ReadCatalog Action = "catalog.read"
	// CreateApp makes an app.
	CreateApp Action = "app.create"
	// ManageApp changes an app: its name, its schemes and channels and their settings, its
	// retention policies.
	ManageApp Action = "app.manage"
	// DeleteApp deletes an app with everything in it.
	DeleteApp Action = "app.delete"
	// Upload records a build or a debug file in an app.
	Upload Action = "release.upload"
	// EditRelease changes a release's changelog, notes and update-feed settings.
	EditRelease Action = "release.edit"
	// PinRelease pins or unpins a release (retention never deletes a pinned one).
	PinRelease Action = "release.pin"
	// DeleteRelease deletes a release and its package.
	DeleteRelease Action = "release.delete"
	// DeleteDebugFile deletes a debug file.
	DeleteDebugFile Action = "debug_file.delete"
	// RotateFeedToken makes a channel's update-feed token anew (it opens a protected channel's
	// feeds, so it is an installation-wide secret's equal).
	RotateFeedToken Action = "channel.feed_token"
	// ManageWebhooks reads and changes webhooks (their URLs carry chat services' secrets).
	ManageWebhooks Action = "webhook.manage"
	// ReadDevices lists and exports registered devices.
	ReadDevices Action = "device.read"
	// SyncDevice registers or updates a device by its UDID.
	SyncDevice Action = "device.sync"
	// ManageDevices deletes devices and approves unverified ones.
	ManageDevices Action = "device.manage"
	// ManageTokens lists, makes and revokes API tokens of any owner.
	ManageTokens Action = "token.manage"
	// ManagePeople reads and changes users, their roles, and app members.
	ManagePeople Action = "people.manage"
	// InvitePeople invites a colleague by email to one app (OnApp), as its member: the app's
	// developers may bring in whom they work with. (Inviting to the console, with a role, is
	// ManagePeople.)
	InvitePeople Action = "people.invite"
	// ReadAudit reads the audit log.
	ReadAudit Action = "audit.read"
	// UseSession reads, completes or aborts a resumable upload session (OwnSession names whose).
	UseSession Action = "session.use"
	// ConfigureSigning switches Slipway's Sparkle signing of a channel's builds on or off.
	ConfigureSigning Action = "channel.signing"
	// SignRelease has an upload signed with the operator's Sparkle key (in a channel where signing
	// is on): whoever may do it can make every app that trusts the key install what they upload.
	SignRelease Action = "release.sign"
	// ManageTesters makes and deletes tester groups and puts testers in and out of them.
	ManageTesters Action = "tester.manage"
	// ReadTesters lists groups and testers (the installation), or who a release went to and what
	// they did with it (an app).
	ReadTesters Action = "tester.read"
	// Distribute sends a release to testers and groups (naming a tester makes them one).
	Distribute Action = "release.distribute"
	// Install opens the builds of a channel open to its testers only (OnChannel): its pages,
	// install links, manifests, downloads and feeds.
	Install Action = "release.install"
	// SendFeedback reports on a build (OnFeedback): anyone may on a channel open to anyone (Open),
	// and on a tester-only channel whoever may install the build.
	SendFeedback Action = "feedback.send"
	// ReadFeedback reads an app's feedback, with its authors and screenshots: the app's members,
	// and tokens that read the app.
	ReadFeedback Action = "feedback.read"
	// ManageFeedback marks an app's feedback open or resolved.
	ManageFeedback Action = "feedback.manage"
	// DeleteFeedback deletes a report: what ManageFeedback allows, and the tester who wrote it
	// (who also reads it: ReadFeedback on OnReport).
	DeleteFeedback Action = "feedback.delete"
)

// Actions lists every action, for the table test and the documentation.
var Actions = []Action{ReadCatalog, CreateApp, ManageApp, DeleteApp, Upload, EditRelease, PinRelease, DeleteRelease,
	DeleteDebugFile, RotateFeedToken, ManageWebhooks, ReadDevices, SyncDevice, ManageDevices, ManageTokens, ManagePeople,
	InvitePeople, ReadAudit, UseSession, ConfigureSigning, SignRelease, ManageTesters, ReadTesters, Distribute, Install,
	SendFeedback, ReadFeedback, ManageFeedback, DeleteFeedback}

// Resource is what an action is taken on: an app (AppID), or the installation (AppID 0), with
// what the rules need to know of it.
type Resource struct {
	// AppID is the app acted on (0: the installation).
	AppID int64
	// UploadedBy is a release's uploader (a token id, 0: unknown), for EditRelease: an upload
	// token may edit what it uploaded.
	UploadedBy int64
	// SessionToken is an upload session's token, for UseSession: a token uses its own sessions.
	SessionToken int64
	// Listing marks a listing of apps that shows only what the actor may see (AppListing).
	Listing bool
	// ChannelID and ReleaseID are the channel (and release, 0: any of its releases) Install
	// opens.
	ChannelID, ReleaseID int64
	// Open marks a channel open to anyone with its key (not tester-only), for SendFeedback.
	Open bool
	// Author is the tester who wrote a report (0: someone else), for DeleteFeedback.
	Author int64
}

// OnFeedback is the resource of SendFeedback: a release of a channel of an app, open to anyone
// or not.
func OnFeedback(appID, channelID, releaseID int64, open bool) Resource {
	return Resource{AppID: appID, ChannelID: channelID, ReleaseID: releaseID, Open: open}
}

// OnReport is the resource of an action on one report of an app, written by tester author (0:
// not a tester).
func OnReport(appID, author int64) Resource { return Resource{AppID: appID, Author: author} }

// OnChannel is the resource of Install: a release of a channel of an app (releaseID 0: the
// channel's pages, which show the releases the actor may install).
func OnChannel(appID, channelID, releaseID int64) Resource {
	return Resource{AppID: appID, ChannelID: channelID, ReleaseID: releaseID}
}

// Installation is the resource of installation-wide actions (tokens, people, devices, ...).
var Installation = Resource{}

// AppListing is the resource of ReadCatalog for a listing of apps that shows the actor only the
// apps ListedApps names: a token limited to apps lists only those. (ReadCatalog on Installation
// is a read across every app, refused to such a token.)
var AppListing = Resource{Listing: true}

// OnApp is the resource of an action on one app.
func OnApp(appID int64) Resource { return Resource{AppID: appID} }

// OnRelease is the resource of an action on one release of an app.
func OnRelease(appID, uploadedBy int64) Resource {
	return Resource{AppID: appID, UploadedBy: uploadedBy}
}

// OwnSession is the resource of an action on an upload session made by token.
func OwnSession(token int64) Resource { return Resource{SessionToken: token} }

// Members answers whether a console user is a member of an app (pkg/postgres).
type Members interface {
	IsAppMember(ctx context.Context, appID, userID int64) (bool, error)
}

// TesterGrants answers whether a tester may install a release of a channel (pkg/postgres).
type TesterGrants interface {
	MayInstall(ctx context.Context, testerID, channelID, releaseID int64) (bool, error)
}

// Policy is the one place that decides.
type Policy struct {
	Members Members
	Testers TesterGrants
}

// Authorize returns nil when ctx's actor may take act on res, an errs.Forbidden saying what
// would allow it when it may not, or errs.Unauthenticated for a request with no actor at all.
// A context without an actor is anonymous: the edges set one (httpapi, web, the commands, each
// background component), so a caller that forgot gets nothing.
func (p *Policy) Authorize(ctx context.Context, act Action, res Resource) error {
	a, ok := distribution.ActorIn(ctx)
	if !ok {
		a = distribution.AnonymousActor()
	}
	d := Decide(a, act, res)
	if d.NeedsMembership {
		member, err := p.Members.IsAppMember(ctx, res.AppID, a.UserID)
		if err != nil {
			return err
		}
		if member {
			return nil
		}
	}
	if d.NeedsTesterGrant && a.TesterID != 0 && p.Testers != nil {
		ok, err := p.Testers.MayInstall(ctx, a.TesterID, res.ChannelID, res.ReleaseID)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
	}
	return d.Err
}

// ListedApps returns the apps a listing (AppListing) may show ctx's actor: limited true and
// their ids for a token limited to apps, limited false (every app) for anyone else.
func (p *Policy) ListedApps(ctx context.Context) (apps []int64, limited bool) {
	a, ok := distribution.ActorIn(ctx)
	if !ok || !a.AppLimited() {
		return nil, false
	}
	return slices.Clone(a.Apps), true
}

// Allowed reports whether ctx's actor may take act on res (a page deciding what to show).
func (p *Policy) Allowed(ctx context.Context, act Action, res Resource) bool {
	return p.Authorize(ctx, act, res) == nil
}

// Decision is the table's answer: allowed (Err nil), refused (Err), or allowed only to a member
// of the resource's app (NeedsMembership) or to a tester the channel or release was given to
// (NeedsTesterGrant); Err is the refusal when they are neither.
type Decision struct {
	Err              error
	NeedsMembership  bool
	NeedsTesterGrant bool
}

var allow = Decision{}

// appActions are those a developer may take on the apps they are members of.
var appActions = map[Action]bool{ManageApp: true, Upload: true, EditRelease: true, DeleteRelease: true, SignRelease: true,
	Distribute: true, InvitePeople: true, ManageFeedback: true, DeleteFeedback: true}

// Decide is the rule table: what each kind of actor may do. It reads nothing but its arguments,
// so the table test covers it whole.
func Decide(a distribution.Actor, act Action, res Resource) Decision {
	if act == SendFeedback {
		if a.Kind == distribution.ActorToken {
			// A token that presents itself acts within its limits, even where no credentials
			// would do.
			if d, ok := decideLimits(a, act, res); !ok {
				return d
			}
		}
		if res.Open {
			// Whoever may open the build's page may say what they saw.
			return allow
		}
		act = Install
	}
	switch a.Kind {
	case distribution.ActorSystem:
		// The command line on the server and the background components act for the operator.
		return allow
	case distribution.ActorToken:
		d := decideToken(a, act, res)
		if d.Err == nil && a.Role != "" && a.Role != distribution.RoleAdmin {
			// A token owned by a console user never does more than its owner may now: what the
			// token's rules allow, the owner's role must allow too (a developer's token uploads
			// only into the apps they are a member of).
			return decideUser(a, act, res)
		}
		return d
	case distribution.ActorUser:
		return decideUser(a, act, res)
	case distribution.ActorTester:
		return decideTester(act, a, res)
	}
	if act == Install {
		return Decision{Err: errs.New(errs.Unauthenticated, "this channel is open to its testers only: sign in with the link Slipway mails you")}
	}
	// Listing and reading apps needs a token too: a listing hands out channel keys. The reads by
	// channel key ask no action: whoever holds the key may read the channel.
	return Decision{Err: errs.New(errs.Unauthenticated, "an API token is required: send it as \"Authorization: Token <token>\" or a token parameter")}
}

// decideToken: an admin token may do everything; an upload token may read, upload, edit its
// own uploads, sync devices and use its own upload sessions. (A token owned by a person has the
// scope its owner's role allows now: the store computes it at authentication.)
func decideToken(a distribution.Actor, act Action, res Resource) Decision {
	if act == Install {
		// A token reads a tester-only channel's builds as it reads the catalogue.
		act = ReadCatalog
	}
	if d, ok := decideLimits(a, act, res); !ok {
		return d
	}
	if act == SignRelease {
		// A signature is trusted by every app that embeds the key: a token's uploads are signed
		// only when it is limited to the app (decideLimits checked which), or when it is an
		// unlimited admin token, the operator's own.
		if a.AppLimited() || a.Scope == distribution.ScopeAdmin && len(a.Abilities) == 0 {
			return allow
		}
		return refuse("Slipway signs the builds of tokens limited to the app (slipway token create --app) and of admin tokens; sign the build in CI (ed_signature) instead")
	}
	if a.Scope == distribution.ScopeAdmin {
		return allow
	}
	if a.Scope == distribution.ScopeUpload {
		switch act {
		case ReadCatalog, Upload, ReadDevices, SyncDevice, Distribute:
			return allow
		case ReadFeedback:
			if res.AppID != 0 {
				return allow
			}
			return refuse("reading every app's feedback needs an admin token")
		case ReadTesters:
			if res.AppID != 0 {
				return allow
			}
			return refuse("listing every tester needs an admin token")
		case EditRelease:
			if res.UploadedBy != 0 && res.UploadedBy == a.TokenID {
				return allow
			}
			return refuse("an upload token may edit only the releases it uploaded; this needs an admin token")
		case UseSession:
			if res.SessionToken == a.TokenID {
				return allow
			}
			return Decision{Err: errs.New(errs.NotFound, "no such upload session")}
		}
	}
	if act == PinRelease {
		return refuse("pinning a release (keeping it from retention) needs an admin token")
	}
	return refuse("this token's scope (%s) does not allow this operation; it needs admin", a.Scope)
}

// abilityOf is the ability each action needs of a token limited to abilities; an action not
// listed is refused to such a token.
var abilityOf = map[Action]string{
	ReadCatalog: distribution.AbilityRead,
	Upload:      distribution.AbilityUpload, EditRelease: distribution.AbilityUpload, UseSession: distribution.AbilityUpload,
	SignRelease: distribution.AbilityUpload,
	ReadDevices: distribution.AbilityDevices, SyncDevice: distribution.AbilityDevices, ManageDevices: distribution.AbilityDevices,
	Distribute: distribution.AbilityUpload, ReadTesters: distribution.AbilityRead, ReadFeedback: distribution.AbilityRead,
	SendFeedback: distribution.AbilityRead,
}

// decideLimits applies a token's limits, before its scope: a token limited to apps acts on no
// other app, and on the installation as a whole only to list its apps (AppListing), to use its
// own upload sessions, and to reach devices (which belong to no app) when its abilities name
// devices; a token limited to abilities takes only the actions they cover. ok is false with the
// refusal when the limits refuse.
func decideLimits(a distribution.Actor, act Action, res Resource) (Decision, bool) {
	if a.AppLimited() {
		switch {
		case res.AppID != 0 && !a.LimitedTo(res.AppID):
			return refuse("this token is limited to other apps; an admin can make one for this app (slipway token create --app)"), false
		case res.AppID == 0 && act == UseSession && res.SessionToken != a.TokenID:
			// Its own sessions went only into its apps; another token's might not have.
			return Decision{Err: errs.New(errs.NotFound, "no such upload session")}, false
		case res.AppID == 0 && act == Upload:
			return refuse("this token is limited to apps and cannot create one: upload with the channel_key of a channel of its apps"), false
		case res.AppID == 0 && !reachesInstallation(a, act, res):
			return refuse("this token is limited to apps; this operation is not about one app and needs a token for every app"), false
		}
	}
	if len(a.Abilities) > 0 {
		if need := abilityOf[act]; need == "" || !slices.Contains(a.Abilities, need) {
			return refuse("this token may only %s", strings.Join(a.Abilities, ", ")), false
		}
	}
	return allow, true
}

// reachesInstallation reports whether a token limited to apps may take act on a resource that
// names no app.
func reachesInstallation(a distribution.Actor, act Action, res Resource) bool {
	switch act {
	case ReadCatalog:
		return res.Listing
	case UseSession:
		return res.SessionToken != 0
	case ReadDevices, SyncDevice, ManageDevices:
		return slices.Contains(a.Abilities, distribution.AbilityDevices)
	}
	return false
}

// Mint decides whether actor a may make a token of scope limited to apps and abilities (empty:
// none): never one that may do more than a itself. An upload token makes no admin token; a token
// limited to apps makes only tokens limited to some of them, and one limited to abilities only
// tokens limited to some of those. (Making tokens at all is ManageTokens, which the installation
// grants only to admins and to admin tokens without app limits.)
func Mint(a distribution.Actor, scope string, apps []int64, abilities []string) error {
	if a.Kind != distribution.ActorToken {
		return nil
	}
	if a.Scope != distribution.ScopeAdmin && scope == distribution.ScopeAdmin {
		return errs.New(errs.Forbidden, "a %s token cannot make an admin token", a.Scope)
	}
	if a.AppLimited() && (len(apps) == 0 || !subset(apps, a.Apps)) {
		return errs.New(errs.Forbidden, "this token is limited to apps: it can make only tokens limited to some of them")
	}
	if len(a.Abilities) > 0 && (len(abilities) == 0 || !subset(abilities, a.Abilities)) {
		return errs.New(errs.Forbidden, "this token may only %s: it can make only tokens limited to some of that", strings.Join(a.Abilities, ", "))
	}
	return nil
}

func subset[T comparable](xs, of []T) bool {
	for _, x := range xs {
		if !slices.Contains(of, x) {
			return false
		}
	}
	return true
}

// decideUser: admins may do everything; developers may read and change the apps they are members
// of (not create or delete apps, pin, or hold installation-wide secrets); viewers may read.
func decideUser(a distribution.Actor, act Action, res Resource) Decision {
	switch a.Role {
	case distribution.RoleAdmin:
		return allow
	case distribution.RoleDeveloper, distribution.RoleViewer:
	default:
		return refuse("your account has no role; an admin can give you one")
	}
	notMember := errs.New(errs.Forbidden, "you are not a member of this app; an admin can add you")
	switch {
	case act == ReadCatalog:
		return allow
	case act == Install:
		// The app's members, and the tester a staff member is by their email.
		return Decision{NeedsMembership: true, NeedsTesterGrant: true,
			Err: errs.New(errs.Forbidden, "this channel is open to its testers only, and you are not one of them")}
	case act == ReadDevices && a.Role == distribution.RoleDeveloper:
		return allow
	case act == ReadFeedback && res.AppID != 0:
		// Feedback names testers and holds what they wrote: the app's members read it.
		return Decision{NeedsMembership: true, Err: notMember}
	case act == ReadTesters && a.Role == distribution.RoleDeveloper:
		if res.AppID == 0 {
			return allow
		}
		return Decision{NeedsMembership: true, Err: notMember}
	case appActions[act] && res.AppID != 0:
		if a.Role == distribution.RoleDeveloper {
			return Decision{NeedsMembership: true, Err: notMember}
		}
		return refuse("viewers cannot change anything; an admin can make you a developer")
	case act == UseSession:
		if res.SessionToken != 0 && res.SessionToken == a.TokenID {
			return allow
		}
		return Decision{Err: errs.New(errs.NotFound, "no such upload session")}
	case act == Upload && a.Role == distribution.RoleDeveloper:
		// An upload into no app makes one (or finds one by name): creating apps is the admins'.
		return refuse("a build that makes a new app needs the admin role; upload it on the page of an app you are a member of, or ask an admin")
	}
	return refuse("this needs the admin role; you are %s", distribution.WithArticle(a.Role))
}

// decideTester: a tester signed in with a mailed link may install what was given to them (the
// store answers which), and nothing else.
func decideTester(act Action, a distribution.Actor, res Resource) Decision {
	if (act == ReadFeedback || act == DeleteFeedback) && res.Author != 0 && res.Author == a.TesterID {
		return allow
	}
	if act == Install {
		return Decision{NeedsTesterGrant: true, Err: errs.New(errs.Forbidden, "this build was not given to you; ask the team to add you to its testers")}
	}
	return refuse("testers may install the builds given to them, nothing else")
}

func refuse(format string, args ...any) Decision {
	return Decision{Err: errs.New(errs.Forbidden, format, args...)}
}
