package web

import (
	"encoding/csv"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/catalog"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/distribution/testers"
	"github.com/slipwayhq/slipway/pkg/errs"
)

// The team's side of testers in the console: the Testers page (/console/testers: groups, and
// testers pasted into them or taken out), a channel's tester groups on its page, and on a build's
// page who it went to and what each tester did with it. Every form goes through the use case the
// API uses (testers.Testers, catalog.Apps.UpdateChannel), which asks the policy again.

// testersURL is the console's Testers page.
func (h *Handler) testersURL() string { return h.links.Base + "/console/testers" }

// groupMembersShown bounds the testers a group lists on the Testers page (the API lists all).
const groupMembersShown = 500

type consoleTestersView struct {
	User       *distribution.User
	CSRF, Base string
	Can        grants
	// Manage: the person may make groups and put testers in them (policy.ManageTesters).
	Manage bool
	// MailOff: no SMTP relay is configured, so mails wait in the outbox.
	MailOff bool
	Groups  []groupView
	// Loose are testers in no group (named for one build, or taken out of every group).
	Loose []distribution.Tester
	Form  formState
}

type groupView struct {
	distribution.TesterGroup
	Members []distribution.Tester
	More    int
}

// consoleTesters: GET /console/testers, the groups and their testers (those who may read them:
// policy.ReadTesters; the forms for those who may manage them).
func (h *Handler) consoleTesters(c *gin.Context) error {
	session, u, ok := h.consoleUser(c)
	if !ok {
		return nil
	}
	return h.renderTesters(c, session, u, formState{}, http.StatusOK)
}

func (h *Handler) renderTesters(c *gin.Context, session string, u *distribution.User, form formState, status int) error {
	ctx := reqCtx(c)
	gs, err := h.svc.Testers.Groups(ctx)
	if err != nil {
		return err
	}
	all, err := h.svc.Testers.ListTesters(ctx, "")
	if err != nil {
		return err
	}
	v := consoleTestersView{User: u, CSRF: h.csrfToken(session), Base: h.links.Base, Can: h.grants(c, 0), Form: form,
		Manage: h.svc.Policy.Allowed(ctx, policy.ManageTesters, policy.Installation), MailOff: !h.svc.MailOn}
	index := map[string]int{}
	for i, g := range gs {
		index[g.Alias] = i
		v.Groups = append(v.Groups, groupView{TesterGroup: g})
	}
	for _, t := range all {
		if len(t.Groups) == 0 {
			v.Loose = append(v.Loose, t)
		}
		for _, alias := range t.Groups {
			if i, ok := index[alias]; ok {
				if g := &v.Groups[i]; len(g.Members) < groupMembersShown {
					g.Members = append(g.Members, t)
				} else {
					g.More++
				}
			}
		}
	}
	h.consoleRender(c, status, "console-testers", page{Title: "Testers · Console · Slipway", Body: v,
		Crumbs: []crumb{{Text: "Console", URL: h.links.Base + "/console"}, {Text: "Testers"}}}, session, u)
	return nil
}

// onTesters makes a form of the Testers page show its failure in place.
func (h *Handler) onTesters(c *gin.Context, f *formCall, formID string, labels map[string]fieldLabel) {
	f.inPlace(formID, labels, func(s formState) error {
		return h.renderTesters(c, f.session, f.user, s, http.StatusUnprocessableEntity)
	})
}

// consoleCreateGroup: POST /console/testers/groups (alias, name) makes a group.
func (h *Handler) consoleCreateGroup(c *gin.Context, f *formCall) (string, error) {
	if err := h.may(c, policy.ManageTesters, policy.Installation); err != nil {
		return "", err
	}
	h.onTesters(c, f, "create-group", map[string]fieldLabel{"alias": {"alias", "Alias"}, "name": {"name", "Name"}})
	g, err := h.svc.Testers.CreateGroup(reqCtx(c), testers.GroupInput{Alias: c.PostForm("alias"), Name: c.PostForm("name")})
	if err != nil {
		return "", err
	}
	f.ok("Group %s made: paste its testers' emails below.", g.Alias)
	return h.testersURL() + "#group-" + g.Alias, nil
}

// consoleDeleteGroup: POST /console/testers/groups/:alias/delete (with "confirm").
func (h *Handler) consoleDeleteGroup(c *gin.Context, f *formCall) (string, error) {
	if err := h.may(c, policy.ManageTesters, policy.Installation); err != nil {
		return "", err
	}
	alias := c.Param("alias")
	h.onTesters(c, f, "delete-group-"+alias, nil)
	if err := confirmed(c); err != nil {
		return "", err
	}
	if err := h.svc.Testers.DeleteGroup(reqCtx(c), alias); err != nil {
		return "", err
	}
	f.ok("Group %s deleted. Channels it opened stay closed to everyone else.", alias)
	return h.testersURL(), nil
}

// consoleAddTesters: POST /console/testers/groups/:alias/testers (emails: one a line, or CSV
// lines "email,name") puts testers in a group, all or none.
func (h *Handler) consoleAddTesters(c *gin.Context, f *formCall) (string, error) {
	if err := h.may(c, policy.ManageTesters, policy.Installation); err != nil {
		return "", err
	}
	alias := c.Param("alias")
	h.onTesters(c, f, "add-testers-"+alias, map[string]fieldLabel{"emails": {"emails", "Emails"}, "names": {"emails", "Names"}})
	in, err := parseTesterList(c.PostForm("emails"))
	if err != nil {
		return "", err
	}
	out, err := h.svc.Testers.AddTesters(reqCtx(c), alias, in)
	if err != nil {
		return "", err
	}
	f.ok("%s in group %s now (%s given).", plural(len(out), "tester"), alias, plural(len(in.Emails), "email"))
	return h.testersURL() + "#group-" + alias, nil
}

// parseTesterList reads a pasted list of testers: one email a line, or CSV lines "email,name"
// (a header line "email,name" is skipped; quotes as in CSV). Names are given for every line or
// for none, as AddTesters takes them: lines without a name get "".
func parseTesterList(text string) (testers.AddTestersInput, error) {
	var in testers.AddTestersInput
	r := csv.NewReader(strings.NewReader(text))
	r.FieldsPerRecord, r.TrimLeadingSpace, r.LazyQuotes = -1, true, true
	named := false
	for first := true; ; first = false {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return in, errs.Field("emails", "could not be read as one email a line or CSV (email,name): %s", err.Error())
		}
		if len(rec) == 0 || strings.TrimSpace(rec[0]) == "" {
			continue
		}
		email := strings.TrimSpace(rec[0])
		if first && strings.EqualFold(email, "email") {
			continue
		}
		n := ""
		if len(rec) > 1 {
			n = strings.TrimSpace(strings.Join(rec[1:], ","))
		}
		named = named || n != ""
		in.Emails = append(in.Emails, email)
		in.Names = append(in.Names, n)
		if len(in.Emails) > distribution.MaxTestersPerCall {
			return in, errs.Field("emails", "names more than %d emails; paste at most %d at once", distribution.MaxTestersPerCall, distribution.MaxTestersPerCall)
		}
	}
	if !named {
		in.Names = nil
	}
	if len(in.Emails) == 0 {
		return in, errs.Field("emails", "name at least one email")
	}
	return in, nil
}

// consoleRemoveTester: POST /console/testers/groups/:alias/remove (email) takes a tester out of
// a group: at once, they reach nothing the group opened.
func (h *Handler) consoleRemoveTester(c *gin.Context, f *formCall) (string, error) {
	if err := h.may(c, policy.ManageTesters, policy.Installation); err != nil {
		return "", err
	}
	alias, email := c.Param("alias"), c.PostForm("email")
	if err := h.svc.Testers.RemoveTester(reqCtx(c), alias, email); err != nil {
		return "", err
	}
	f.ok("%s is out of group %s.", email, alias)
	return h.testersURL() + "#group-" + alias, nil
}

// channelTestersView is a channel page's Testers section.
type channelTestersView struct {
	// Groups are the aliases of the groups that open the channel (none: open to its link or
	// password); All every group, for the form (nil when the person may not list them).
	Groups  []string
	All     []groupChoice
	MailOff bool
	// Members are the testers of the channel's groups (the first channelMembersShown), More how
	// many more; TestersURL the Testers page.
	Members    []distribution.Tester
	More       int
	TestersURL string
	// Newest is what the testers did with the channel's newest build (nil: none, or not shown).
	Newest *newestTestersView
}

// newestTestersView counts the states of the testers of a channel's newest build.
type newestTestersView struct {
	Version, URL               string
	Installed, Opened, Invited int
}

// channelMembersShown bounds the testers a channel page lists.
const channelMembersShown = 50

type groupChoice struct {
	Alias, Name string
	Testers     int
	On          bool
}

// channelTesters is a channel page's Testers section: its groups and their testers, and (newest
// not nil) what they did with the channel's newest build.
func (h *Handler) channelTesters(c *gin.Context, ch *distribution.Channel, form formState, newest *distribution.Release) *channelTestersView {
	ctx := reqCtx(c)
	v := &channelTestersView{Groups: ch.TesterGroups, MailOff: !h.svc.MailOn, TestersURL: h.testersURL()}
	seen := map[int64]bool{}
	for _, alias := range ch.TesterGroups {
		ts, err := h.svc.Testers.ListTesters(ctx, alias)
		if err != nil {
			break // (someone who may not read testers sees the groups only)
		}
		for _, t := range ts {
			if seen[t.ID] {
				continue
			}
			seen[t.ID] = true
			if len(v.Members) < channelMembersShown {
				v.Members = append(v.Members, t)
			} else {
				v.More++
			}
		}
	}
	if newest != nil {
		if rts, err := h.svc.Testers.ReleaseTesters(ctx, newest.ID); err == nil && len(rts) > 0 {
			n := &newestTestersView{Version: versionText(newest), URL: h.buildURL(newest.ID) + "#release-testers"}
			for _, rt := range rts {
				switch rt.State() {
				case distribution.TesterInstalled:
					n.Installed++
				case distribution.TesterOpened:
					n.Opened++
				default:
					n.Invited++
				}
			}
			v.Newest = n
		}
	}
	if gs, err := h.svc.Testers.Groups(ctx); err == nil {
		fid := "channel-testers-" + itoa(ch.ID)
		for _, g := range gs {
			on := slices.Contains(ch.TesterGroups, g.Alias)
			v.All = append(v.All, groupChoice{Alias: g.Alias, Name: g.Name, Testers: g.Testers, On: form.Checked(fid, "tester_groups", g.Alias, on)})
		}
	}
	return v
}

// consoleSetChannelGroups: POST /console/channels/:id/testers (tester_groups, any number; none
// opens the channel to its link or password again), through the same use case as
// PATCH /api/channels/:id {"tester_groups": [...]}.
func (h *Handler) consoleSetChannelGroups(c *gin.Context, f *formCall) (string, error) {
	id, err := idParam(c, "id", "channel")
	if err != nil {
		return "", err
	}
	if _, err := h.manageChannel(c, id); err != nil {
		return "", err
	}
	h.onChannel(c, f, id, "channel-testers-"+itoa(id), map[string]fieldLabel{"tester_groups": {"tester_groups", "Tester groups"}})
	groups := append([]string{}, c.PostFormArray("tester_groups")...)
	out, err := h.svc.Apps.UpdateChannel(reqCtx(c), id, catalog.ChannelChanges{TesterGroups: groups})
	if err != nil {
		return "", err
	}
	if len(out.TesterGroups) == 0 {
		f.ok("Channel %s is open to anyone with its link%s again.", out.Name, map[bool]string{true: " and password", false: ""}[out.HasPassword()])
	} else {
		f.ok("Channel %s is open to the testers of %s only.", out.Name, strings.Join(out.TesterGroups, ", "))
	}
	return h.channelURL(id) + "#testers", nil
}

// releaseTesterRow is a tester of a build on its console page.
type releaseTesterRow struct {
	Email, Name, State, Invited, Opened, Installed, Mail string
	Direct                                               bool
}

// releaseTesters lists who a build went to and what each did (nil when the person may not
// read it, or it went to nobody).
func (h *Handler) releaseTesters(c *gin.Context, releaseID int64) []releaseTesterRow {
	rts, err := h.svc.Testers.ReleaseTesters(reqCtx(c), releaseID)
	if err != nil {
		return nil
	}
	out := make([]releaseTesterRow, len(rts))
	for i, rt := range rts {
		r := releaseTesterRow{Email: rt.Email, Name: rt.Name, State: rt.State(), Mail: rt.Mail, Direct: rt.Direct}
		if !rt.InvitedAt.IsZero() {
			r.Invited = h.when(rt.InvitedAt)
		}
		if rt.OpenedAt != nil {
			r.Opened = h.when(*rt.OpenedAt)
		}
		if rt.InstalledAt != nil {
			r.Installed = h.when(*rt.InstalledAt)
		}
		out[i] = r
	}
	return out
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
