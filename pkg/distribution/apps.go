package distribution

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/links"
	"github.com/slipwayhq/slipway/pkg/webhook"
)

// Apps, schemes and channels: the management use cases. Changes arrive as pointers, so that PUT
// and PATCH (which Zealot treats alike) change only the fields a client sent.

// ListApps returns a page of apps with their schemes and channels, ordered by id.
func (s *Service) ListApps(ctx context.Context, p Page) ([]App, error) {
	return s.Store.ListApps(ctx, p)
}

// App returns one app with its schemes and channels.
func (s *Service) App(ctx context.Context, id int64) (*App, error) { return s.Store.GetApp(ctx, id) }

// CreateApp creates an app with no schemes.
func (s *Service) CreateApp(ctx context.Context, name string) (*App, error) {
	name, err := requiredName("name", name)
	if err != nil {
		return nil, err
	}
	return s.Store.CreateApp(ctx, name)
}

// RenameApp renames an app.
func (s *Service) RenameApp(ctx context.Context, id int64, name string) (*App, error) {
	name, err := requiredName("name", name)
	if err != nil {
		return nil, err
	}
	defer s.changed(Change{AppID: id})
	return s.Store.RenameApp(ctx, id, name)
}

// requiredName trims a name and checks it is 1 to 255 characters of valid text.
func requiredName(field, name string) (string, error) {
	name = strings.TrimSpace(name)
	switch {
	case name == "":
		return "", errs.Field(field, "can't be blank")
	case !utf8.ValidString(name) || utf8.RuneCountInString(name) > 255:
		return "", errs.Field(field, "must be valid text of at most 255 characters")
	}
	return name, nil
}

// SchemeChanges are the fields of a scheme a client sets; nil leaves a field as it is.
type SchemeChanges struct {
	Name            *string
	NewBuildCallout *bool
	RetainedBuilds  *int
}

// maxRetainedBuilds bounds retained_builds to something a channel could hold.
const maxRetainedBuilds = 100_000

func (ch SchemeChanges) apply(sc *Scheme) error {
	if ch.Name != nil {
		name, err := requiredName("name", *ch.Name)
		if err != nil {
			return err
		}
		sc.Name = name
	}
	if ch.NewBuildCallout != nil {
		sc.NewBuildCallout = *ch.NewBuildCallout
	}
	if ch.RetainedBuilds != nil {
		if *ch.RetainedBuilds < 0 || *ch.RetainedBuilds > maxRetainedBuilds {
			return errs.Field("retained_builds", "must be between 0 (keep every build) and %d", maxRetainedBuilds)
		}
		sc.RetainedBuilds = *ch.RetainedBuilds
	}
	return nil
}

// Schemes returns an app's schemes with their channels.
func (s *Service) Schemes(ctx context.Context, appID int64) ([]Scheme, error) {
	return s.Store.ListSchemes(ctx, appID)
}

// Scheme returns one scheme with its channels.
func (s *Service) Scheme(ctx context.Context, id int64) (*Scheme, error) {
	return s.Store.GetScheme(ctx, id)
}

// CreateScheme adds a scheme to an app. The name is required; new_build_callout defaults to
// true and retained_builds to 0 (keep every build), as in Zealot.
func (s *Service) CreateScheme(ctx context.Context, appID int64, ch SchemeChanges) (*Scheme, error) {
	if ch.Name == nil {
		return nil, errs.Field("name", "can't be blank")
	}
	sc := &Scheme{AppID: appID, NewBuildCallout: true}
	if err := ch.apply(sc); err != nil {
		return nil, err
	}
	return s.Store.CreateScheme(ctx, sc)
}

// UpdateScheme changes the fields of a scheme that ch sets.
func (s *Service) UpdateScheme(ctx context.Context, id int64, ch SchemeChanges) (*Scheme, error) {
	return retryStale(func() (*Scheme, error) {
		sc, err := s.Store.GetScheme(ctx, id)
		if err != nil {
			return nil, err
		}
		if err := ch.apply(sc); err != nil {
			return nil, err
		}
		defer s.changed(Change{SchemeID: id})
		return s.Store.UpdateScheme(ctx, sc)
	})
}

// DeleteScheme deletes a scheme with its channels, releases and debug files, and their objects.
func (s *Service) DeleteScheme(ctx context.Context, id int64) error {
	defer s.changed(Change{SchemeID: id})
	defer s.WakeWebhooks()
	return s.deleted(ctx)(s.Store.DeleteScheme(ctx, id, s.releaseEvents(webhook.EventReleaseDeleted, 0)))
}

// DeviceTypes are the channel device types Zealot allows.
var DeviceTypes = []string{"ios", "android", "macos", "harmonyos", "windows", "linux"}

// DownloadFilenameTypes name downloaded files: the uploaded file's name, or one made of the
// app's name, version and upload time.
var DownloadFilenameTypes = []string{"original", "version_datetime"}

var (
	slugRe     = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	bundleIDRe = regexp.MustCompile(`^[A-Za-z0-9._*-]{1,255}$`)
)

// ChannelChanges are the fields of a channel a client sets; nil leaves a field as it is. An empty
// Password clears the channel's password; an empty GitURL clears it too.
type ChannelChanges struct {
	Name                 *string
	Slug                 *string
	DeviceType           *string
	BundleID             *string
	Password             *string
	GitURL               *string
	DownloadFilenameType *string
}

// apply validates ch and writes it into c. hasReleases forbids changing the device type of a
// channel whose builds are of the old one.
func (ch ChannelChanges) apply(c *Channel, hasReleases bool) error {
	if ch.Name != nil {
		name, err := requiredName("name", *ch.Name)
		if err != nil {
			return err
		}
		c.Name = name
	}
	if ch.Slug != nil {
		slug := strings.TrimSpace(*ch.Slug)
		if !slugRe.MatchString(slug) {
			return errs.Field("slug", "must be 1 to 64 letters, digits, '-' or '_' (it is the channel key in URLs)")
		}
		c.Slug = slug
	}
	if ch.DeviceType != nil {
		dt := strings.ToLower(strings.TrimSpace(*ch.DeviceType))
		if !slices.Contains(DeviceTypes, dt) {
			return errs.Field("device_type", "must be one of %s", strings.Join(DeviceTypes, ", "))
		}
		if hasReleases && dt != c.DeviceType {
			return errs.Field("device_type", "cannot change: the channel holds %s builds; create another channel", c.DeviceType)
		}
		c.DeviceType = dt
	}
	if ch.BundleID != nil {
		id := strings.TrimSpace(*ch.BundleID)
		if id == "" {
			id = "*"
		}
		if !bundleIDRe.MatchString(id) {
			return errs.Field("bundle_id", "must be * (any), a bundle id or package name, or a pattern such as com.example.*")
		}
		c.BundleID = id
	}
	if ch.GitURL != nil {
		u := strings.TrimSpace(*ch.GitURL)
		switch {
		case u == "":
			c.GitURL = nil
		case len(u) > 2048 || links.GitRepo(u) == "":
			return errs.Field("git_url", "must be the repository's address (https://host/org/repo or git@host:org/repo.git), at most 2048 characters")
		default:
			c.GitURL = &u
		}
	}
	if ch.DownloadFilenameType != nil {
		t := strings.TrimSpace(*ch.DownloadFilenameType)
		if !slices.Contains(DownloadFilenameTypes, t) {
			return errs.Field("download_filename_type", "must be one of %s", strings.Join(DownloadFilenameTypes, ", "))
		}
		c.DownloadFilenameType = t
	}
	if ch.Password != nil {
		hash, err := hashPassword(*ch.Password)
		if err != nil {
			return err
		}
		c.PasswordHash = hash
	}
	return nil
}

// maxPasswordBytes is bcrypt's limit: it reads no more, so a longer password would be cut silently.
const maxPasswordBytes = 72

// hashPassword returns the bcrypt hash of a channel password, or nil for "" (no password).
func hashPassword(password string) (*string, error) {
	if password == "" {
		return nil, nil
	}
	if len(password) > maxPasswordBytes {
		return nil, errs.Field("password", "must be at most %d bytes", maxPasswordBytes)
	}
	h, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.DefaultCost)
	if err != nil {
		return nil, err
	}
	hash := string(h)
	return &hash, nil
}

// Channels returns a scheme's channels.
func (s *Service) Channels(ctx context.Context, schemeID int64) ([]Channel, error) {
	return s.Store.ListChannels(ctx, schemeID)
}

// ChannelByID returns a channel with its app and scheme.
func (s *Service) ChannelByID(ctx context.Context, id int64) (*ChannelContext, error) {
	return s.Store.ChannelContextByID(ctx, id)
}

// Channel returns the channel a channel key names, with its app and scheme.
func (s *Service) Channel(ctx context.Context, key string) (*ChannelContext, error) {
	key = strings.TrimSpace(key)
	if key == "" {
		return nil, errs.Field("channel_key", "is required")
	}
	if !slugRe.MatchString(key) {
		return nil, errs.New(errs.NotFound, "channel not found")
	}
	return s.Store.ChannelContextBySlug(ctx, key)
}

// CreateChannel adds a channel to a scheme. name and device_type are required; slug defaults to
// a random unguessable key, bundle_id to * and download_filename_type to original.
func (s *Service) CreateChannel(ctx context.Context, schemeID int64, ch ChannelChanges) (*Channel, error) {
	if ch.Name == nil {
		return nil, errs.Field("name", "can't be blank")
	}
	if ch.DeviceType == nil {
		return nil, errs.Field("device_type", "must be one of %s", strings.Join(DeviceTypes, ", "))
	}
	c := &Channel{SchemeID: schemeID, BundleID: "*", DownloadFilenameType: "original"}
	if err := ch.apply(c, false); err != nil {
		return nil, err
	}
	return s.Store.CreateChannel(ctx, c)
}

// UpdateChannel changes the fields of a channel that ch sets. A changed password revokes the
// password cookies and install links given out with the old one.
func (s *Service) UpdateChannel(ctx context.Context, id int64, ch ChannelChanges) (*Channel, error) {
	return retryStale(func() (*Channel, error) {
		cc, err := s.Store.ChannelContextByID(ctx, id)
		if err != nil {
			return nil, err
		}
		c := cc.Channel
		hasReleases := false
		if ch.DeviceType != nil {
			n, err := s.Store.CountReleases(ctx, id)
			if err != nil {
				return nil, err
			}
			hasReleases = n > 0
		}
		if err := ch.apply(&c, hasReleases); err != nil {
			return nil, err
		}
		defer s.changed(Change{ChannelID: id})
		return s.Store.UpdateChannel(ctx, &c)
	})
}

// DeleteChannel deletes a channel with its releases and debug files, and their objects.
func (s *Service) DeleteChannel(ctx context.Context, id int64) error {
	defer s.changed(Change{ChannelID: id})
	defer s.WakeWebhooks()
	return s.deleted(ctx)(s.Store.DeleteChannel(ctx, id, s.releaseEvents(webhook.EventReleaseDeleted, 0)))
}
