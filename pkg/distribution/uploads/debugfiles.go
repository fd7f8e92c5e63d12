package uploads

import (
	"context"
	"encoding/json"
	"regexp"
	"slices"
	"strings"

	"github.com/slipwayhq/slipway/pkg/debuginfo"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/metrics"
)

// DebugFileStore reads and writes debug files.
type DebugFileStore interface {
	GetDebugFile(ctx context.Context, id int64) (*distribution.DebugFile, error)
	ListDebugFiles(ctx context.Context, appID int64, deviceType string, p distribution.Page) ([]distribution.DebugFile, error)
	DebugFileVersions(ctx context.Context, appID int64, deviceType, releaseVersion, buildVersion string) ([]distribution.DebugFileVersion, error)
	// FindDebugFile returns the newest debug file of a channel's app matching the query, or
	// errs.NotFound.
	FindDebugFile(ctx context.Context, q DebugFileQuery) (*distribution.DebugFile, error)
	// InDebugFileTx runs fn in one transaction (a debug file recorded or replaced), committed
	// when fn returns nil and rolled back otherwise.
	InDebugFileTx(ctx context.Context, fn func(tx DebugFileTx) error) error
	DeleteDebugFile(ctx context.Context, id int64) (string, error)
	// ReleaseBundleIDs lists the distinct bundle ids of an app's releases on a platform (which
	// dSYM of an archive is the app's own).
	ReleaseBundleIDs(ctx context.Context, appID int64, platform string) ([]string, error)
}

// DebugFileTx is what recording or replacing a debug file asks of the database inside its
// transaction (DebugFileStore.InDebugFileTx). A method's error ends the transaction.
type DebugFileTx interface {
	// LockApp locks an app's row FOR KEY SHARE until the commit: an app being destroyed is
	// destroyed after this debug file, or is gone already (errs.NotFound).
	LockApp(ctx context.Context, appID int64) error
	// InsertDebugFile records d and returns its id, unless the app has a debug file of the same
	// content (SHA-256; unique in the schema): then it records nothing and returns that one's id
	// and false.
	InsertDebugFile(ctx context.Context, d *distribution.DebugFile) (int64, bool, error)
	// LockDebugFile returns a debug file's object key and locks its row until the commit
	// (errs.NotFound).
	LockDebugFile(ctx context.Context, id int64) (string, error)
	// UpdateDebugFile saves d's versions, checksums, size, object and file name. When another
	// debug file of the app has that content it saves nothing and returns that one's id (the
	// transaction can then only be rolled back).
	UpdateDebugFile(ctx context.Context, d *distribution.DebugFile) (int64, error)
	// ReplaceMetadata makes meta the debug file's metadata (the Mach-O slices, the mapping).
	ReplaceMetadata(ctx context.Context, fileID int64, meta []distribution.DebugFileMetadata) error
	OwnerTx
}

// sameContent is the refusal of a debug file whose content the app has already (debug file id).
func sameContent(id int64) error {
	return errs.New(errs.Conflict, "this debug file was already uploaded for this app (debug file %d)", id)
}

// DebugEvents makes the debug_file.created event of a debug file (events.Maker).
type DebugEvents interface {
	DebugFileEvents(d *distribution.DebugFile) ([]distribution.Event, error)
}

// DebugFiles runs the use cases of debug files (dSYMs, Android mapping archives): uploading,
// replacing and deleting them, and the lookups crash tools make.
type DebugFiles struct {
	Store    DebugFileStore
	Channels ChannelFinder
	Objects  *Objects
	// Events (nil: none) makes the events of a new debug file; Webhooks (nil: none) is woken
	// after it is recorded.
	Events   DebugEvents
	Webhooks distribution.Waker
	Metrics  *metrics.Metrics
	// Audit records uploads, replacements and deletions as the context's actor (nil: not).
	Audit *distribution.AuditLog
	// Policy decides who may upload, replace, read by id and delete debug files. The lookups by
	// channel key and the existence checks are open to whoever holds the key, as crash tools
	// make them.
	Policy *policy.Policy
}

// auditDebugFile records a change to a debug file: "App 1.3 (4) debug file".
func (dfs *DebugFiles) auditDebugFile(ctx context.Context, action string, df *distribution.DebugFile) {
	dfs.Audit.Record(ctx, action, distribution.AuditTarget{Kind: distribution.TargetDebug, ID: df.ID, AppID: df.AppID,
		Name: distribution.ReleaseName(df.AppName, df.ReleaseVersion, df.BuildVersion) + " debug file"}, map[string]any{"channel_id": df.ChannelID, "size": df.Size})
}

// DebugFileForm holds a debug-file upload's form fields.
type DebugFileForm struct {
	ChannelKey     string
	ReleaseVersion string
	BuildVersion   string
}

// debugContent is what a parsed debug archive contributes to its row.
type debugContent struct {
	releaseVersion, buildVersion string
	meta                         []distribution.DebugFileMetadata
}

// parseDebugFile reads the stored archive and checks it fits the channel: dSYMs for iOS and macOS,
// mapping/R.txt/manifest for Android. Versions come from the dSYM (iOS, macOS) or from the form,
// else the text manifest (Android).
func (dfs *DebugFiles) parseDebugFile(ctx context.Context, obj *StoredObject, cc *distribution.ChannelContext, f DebugFileForm) (*debugContent, error) {
	ra := dfs.Objects.ReaderAt(ctx, obj)
	a, err := debuginfo.Parse(ra, obj.Size)
	if err != nil {
		if errs.KindOf(err) == errs.Internal {
			return nil, storageErr(dfs.Metrics, "get", err)
		}
		return nil, err
	}
	out := &debugContent{}
	switch cc.Channel.DeviceType {
	case "ios", "macos":
		if len(a.DSYMs) == 0 {
			return nil, errs.Invalidf("this is %s channel, but the archive holds no .dSYM bundle with a Mach-O file", distribution.WithArticle(cc.Channel.DeviceType))
		}
		ids, err := dfs.Store.ReleaseBundleIDs(ctx, cc.App.ID, cc.Channel.DeviceType)
		if err != nil {
			return nil, err
		}
		main := slices.IndexFunc(a.DSYMs, func(d debuginfo.DSYM) bool { return slices.Contains(ids, d.Identifier) })
		if main < 0 {
			main = 0
		}
		out.releaseVersion, out.buildVersion = a.DSYMs[main].ReleaseVersion, a.DSYMs[main].BuildVersion
		for i, d := range a.DSYMs {
			data, _ := json.Marshal(map[string]any{"main": i == main || d.Identifier == a.DSYMs[main].Identifier, "identifier": d.Identifier})
			for _, sl := range d.Slices {
				out.meta = append(out.meta, distribution.DebugFileMetadata{UUID: sl.UUID, Type: sl.Arch, Object: sl.Object, Data: data, Size: sl.Size})
			}
		}
	case "android":
		p := a.Proguard
		if p == nil {
			return nil, errs.Invalidf("this is an Android channel, but the archive holds no mapping.txt, R.txt or AndroidManifest.xml")
		}
		out.releaseVersion = firstNonEmpty(f.ReleaseVersion, p.ReleaseVersion)
		out.buildVersion = firstNonEmpty(f.BuildVersion, p.BuildVersion)
		if out.releaseVersion == "" || out.buildVersion == "" {
			return nil, errs.Invalidf("give release_version and build_version: the archive has no AndroidManifest.xml to read them from")
		}
		files := p.Files
		if files == nil {
			files = []debuginfo.File{}
		}
		var size int64
		for _, file := range files {
			if strings.Contains(strings.ToLower(file.Name), "mapping") {
				size = file.Size
			}
		}
		data, _ := json.Marshal(map[string]any{"files": files})
		out.meta = []distribution.DebugFileMetadata{{UUID: p.UUID, Type: "proguard", Object: p.PackageName, Data: data, Size: size}}
	default:
		return nil, errs.Invalidf("debug files are not supported for %s channels", cc.Channel.DeviceType)
	}
	for _, v := range []string{out.releaseVersion, out.buildVersion} {
		if len(v) > 255 {
			return nil, errs.Invalidf("a version in the debug file is longer than 255 characters")
		}
	}
	return out, nil
}

// UploadDebugFile records a stored debug archive for the channel's app. The object is discarded on
// any error; the same content uploaded twice for one app is errs.Conflict.
func (dfs *DebugFiles) UploadDebugFile(ctx context.Context, obj *StoredObject, f DebugFileForm) (df *distribution.DebugFile, err error) {
	defer func() {
		if err != nil {
			dfs.Objects.Discard(ctx, obj.Key)
		}
	}()
	cc, err := dfs.channelForDebugFile(ctx, f.ChannelKey)
	if err != nil {
		return nil, err
	}
	if err := dfs.Policy.Authorize(ctx, policy.Upload, policy.OnApp(cc.App.ID)); err != nil {
		return nil, err
	}
	content, err := dfs.parseDebugFile(ctx, obj, cc, f)
	if err != nil {
		return nil, err
	}
	defer dfs.wake()
	d := &distribution.DebugFile{
		AppID: cc.App.ID, AppName: cc.App.Name, ChannelID: cc.Channel.ID, DeviceType: cc.Channel.DeviceType,
		ReleaseVersion: content.releaseVersion, BuildVersion: content.buildVersion,
		SHA256: obj.SHA256, MD5: obj.MD5, Size: obj.Size, ObjectKey: obj.Key, Filename: firstNonEmpty(obj.Filename, "debug-file.zip"),
	}
	if err := dfs.record(ctx, d, content.meta); err != nil {
		return nil, err
	}
	if df, err = dfs.Store.GetDebugFile(ctx, d.ID); err != nil {
		return nil, err
	}
	dfs.auditDebugFile(ctx, "debug_file.upload", df)
	return df, nil
}

// record records a debug file (its ID set on d), its metadata and its debug_file.created events,
// and claims its object, in one transaction: its app is locked FOR KEY SHARE, and the same
// content already uploaded for the app is errs.Conflict.
func (dfs *DebugFiles) record(ctx context.Context, d *distribution.DebugFile, meta []distribution.DebugFileMetadata) error {
	return dfs.Store.InDebugFileTx(ctx, func(tx DebugFileTx) error {
		if err := tx.LockApp(ctx, d.AppID); err != nil {
			return err
		}
		id, made, err := tx.InsertDebugFile(ctx, d)
		if err != nil {
			return err
		}
		if !made {
			return sameContent(id)
		}
		d.ID = id
		if err := tx.ReplaceMetadata(ctx, id, meta); err != nil {
			return err
		}
		if dfs.Events != nil {
			evs, err := dfs.Events.DebugFileEvents(d)
			if err != nil {
				return err
			}
			if err := tx.WriteEvents(ctx, evs); err != nil {
				return err
			}
		}
		return tx.Claim(ctx, d.ObjectKey)
	})
}

// replace points a debug file at a new object, versions and metadata, records the old object as
// deleted and claims the new one, in one transaction; it returns the old object's key.
func (dfs *DebugFiles) replace(ctx context.Context, d *distribution.DebugFile, meta []distribution.DebugFileMetadata) (string, error) {
	var oldKey string
	err := dfs.Store.InDebugFileTx(ctx, func(tx DebugFileTx) error {
		if err := tx.LockApp(ctx, d.AppID); err != nil {
			return err
		}
		var err error
		if oldKey, err = tx.LockDebugFile(ctx, d.ID); err != nil {
			return err
		}
		other, err := tx.UpdateDebugFile(ctx, d)
		if err != nil {
			return err
		}
		if other != 0 {
			return sameContent(other)
		}
		if err := tx.ReplaceMetadata(ctx, d.ID, meta); err != nil {
			return err
		}
		if err := tx.MarkDeleted(ctx, oldKey); err != nil {
			return err
		}
		return tx.Claim(ctx, d.ObjectKey)
	})
	return oldKey, err
}

// ReplaceDebugFile replaces a debug file's archive and metadata (PUT). The old object is deleted
// after the commit; the new one is discarded on any error.
func (dfs *DebugFiles) ReplaceDebugFile(ctx context.Context, id int64, obj *StoredObject, f DebugFileForm) (df *distribution.DebugFile, err error) {
	defer func() {
		if err != nil {
			dfs.Objects.Discard(ctx, obj.Key)
		}
	}()
	cc, existing, err := dfs.DebugFileInChannel(ctx, id, f.ChannelKey)
	if err != nil {
		return nil, err
	}
	if err := dfs.Policy.Authorize(ctx, policy.Upload, policy.OnApp(cc.App.ID)); err != nil {
		return nil, err
	}
	content, err := dfs.parseDebugFile(ctx, obj, cc, f)
	if err != nil {
		return nil, err
	}
	upd := *existing
	upd.ReleaseVersion, upd.BuildVersion = content.releaseVersion, content.buildVersion
	upd.SHA256, upd.MD5, upd.Size, upd.ObjectKey, upd.Filename = obj.SHA256, obj.MD5, obj.Size, obj.Key, firstNonEmpty(obj.Filename, existing.Filename)
	oldKey, err := dfs.replace(ctx, &upd, content.meta)
	if err != nil {
		return nil, err
	}
	dfs.Objects.DeleteObjects(ctx, []string{oldKey})
	if df, err = dfs.Store.GetDebugFile(ctx, id); err != nil {
		return nil, err
	}
	dfs.auditDebugFile(ctx, "debug_file.replace", df)
	return df, nil
}

// DeleteDebugFile removes a debug file of the channel's app and its object.
func (dfs *DebugFiles) DeleteDebugFile(ctx context.Context, id int64, channelKey string) error {
	_, df, err := dfs.DebugFileInChannel(ctx, id, channelKey)
	if err != nil {
		return err
	}
	if err := dfs.Policy.Authorize(ctx, policy.DeleteDebugFile, policy.OnApp(df.AppID)); err != nil {
		return err
	}
	key, err := dfs.Store.DeleteDebugFile(ctx, id)
	if err != nil {
		return err
	}
	dfs.Objects.DeleteObjects(context.WithoutCancel(ctx), []string{key})
	dfs.auditDebugFile(ctx, "debug_file.delete", df)
	return nil
}

// DebugFileInChannel returns a debug file that belongs to the app of the channel channelKey names,
// or errs.NotFound.
func (dfs *DebugFiles) DebugFileInChannel(ctx context.Context, id int64, channelKey string) (*distribution.ChannelContext, *distribution.DebugFile, error) {
	cc, err := dfs.channelForDebugFile(ctx, channelKey)
	if err != nil {
		return nil, nil, err
	}
	df, err := dfs.Store.GetDebugFile(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	if df.AppID != cc.App.ID {
		return nil, nil, errs.New(errs.NotFound, "debug file %d not found in this channel's app", id)
	}
	return cc, df, nil
}

// ReadDebugFile returns a debug file of the app of the channel channelKey names, for a reader
// the policy lets read that app (GET /api/debug_files/:id needs a token, and a token limited to
// other apps reads nothing of this one).
func (dfs *DebugFiles) ReadDebugFile(ctx context.Context, id int64, channelKey string) (*distribution.DebugFile, error) {
	_, df, err := dfs.DebugFileInChannel(ctx, id, channelKey)
	if err != nil {
		return nil, err
	}
	return df, dfs.Policy.Authorize(ctx, policy.ReadCatalog, policy.OnApp(df.AppID))
}

func (dfs *DebugFiles) channelForDebugFile(ctx context.Context, channelKey string) (*distribution.ChannelContext, error) {
	return dfs.Channels.Channel(ctx, channelKey)
}

func (dfs *DebugFiles) wake() {
	if dfs.Webhooks != nil {
		dfs.Webhooks.Wake()
	}
}

// Debug-file download orders for release_version=latest.
const (
	OrderVersion    = "version"
	OrderUploadDate = "upload_date"
)

// FindDebugFileForDownload picks the debug file GET /api/debug_files/download names: with
// release_version "latest", the highest version (order "version", the default) or the newest
// upload (order "upload_date"); otherwise the exact release_version (and build_version when
// given), newest upload first.
func (dfs *DebugFiles) FindDebugFileForDownload(ctx context.Context, cc *distribution.ChannelContext, releaseVersion, buildVersion, order string) (*distribution.DebugFile, error) {
	latest := strings.EqualFold(releaseVersion, "latest")
	switch order {
	case "", OrderVersion:
		order = OrderVersion
	case OrderUploadDate, "upload":
		order = OrderUploadDate
	default:
		return nil, errs.Field("order", "must be version or upload_date")
	}
	if !latest {
		if releaseVersion == "" {
			return nil, errs.Field("release_version", "is required (a version, or latest)")
		}
	} else {
		releaseVersion, buildVersion = "", ""
	}
	versions, err := dfs.Store.DebugFileVersions(ctx, cc.App.ID, cc.Channel.DeviceType, releaseVersion, buildVersion)
	if err != nil {
		return nil, err
	}
	if len(versions) == 0 {
		return nil, errs.New(errs.NotFound, "no debug file found for this version")
	}
	best := versions[0] // newest upload
	if latest && order == OrderVersion {
		for _, v := range versions[1:] {
			if distribution.Newer(v.ReleaseVersion, v.BuildVersion, best.ReleaseVersion, best.BuildVersion) {
				best = v
			}
		}
	}
	return dfs.Store.GetDebugFile(ctx, best.ID)
}

// DebugFiles returns a page of the debug files of a channel's app and device type, newest first.
func (dfs *DebugFiles) DebugFiles(ctx context.Context, cc *distribution.ChannelContext, p distribution.Page) ([]distribution.DebugFile, error) {
	return dfs.Store.ListDebugFiles(ctx, cc.App.ID, cc.Channel.DeviceType, p)
}

// DebugFileToDownload returns a debug file by id for its download link (file_url), which crash
// tools follow without credentials, as Zealot's.
func (dfs *DebugFiles) DebugFileToDownload(ctx context.Context, id int64) (*distribution.DebugFile, error) {
	return dfs.Store.GetDebugFile(ctx, id)
}

// DebugFile returns a debug file with its metadata.
func (dfs *DebugFiles) DebugFile(ctx context.Context, id int64) (*distribution.DebugFile, error) {
	df, err := dfs.Store.GetDebugFile(ctx, id)
	if err != nil {
		return nil, err
	}
	return df, dfs.Policy.Authorize(ctx, policy.ReadCatalog, policy.OnApp(df.AppID))
}

// DebugFileByVersion returns the newest debug file of a channel's app with these versions (both
// required, as in Zealot's exists/version), or errs.NotFound.
func (dfs *DebugFiles) DebugFileByVersion(ctx context.Context, cc *distribution.ChannelContext, releaseVersion, buildVersion string) (*distribution.DebugFile, error) {
	releaseVersion, buildVersion = strings.TrimSpace(releaseVersion), strings.TrimSpace(buildVersion)
	if releaseVersion == "" || buildVersion == "" {
		return nil, errs.Invalidf("give release_version and build_version")
	}
	return dfs.Store.FindDebugFile(ctx, DebugFileQuery{AppID: cc.App.ID, DeviceType: cc.Channel.DeviceType,
		ReleaseVersion: releaseVersion, BuildVersion: buildVersion})
}

var (
	md5Re    = regexp.MustCompile(`^[0-9a-fA-F]{32}$`)
	sha256Re = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	uuidRe   = regexp.MustCompile(`^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$`)
)

// DebugFileByChecksum returns the newest debug file whose archive has this checksum: an MD5 (as
// Zealot computes it) or a SHA-256, in hex; errs.NotFound when none.
func (dfs *DebugFiles) DebugFileByChecksum(ctx context.Context, checksum string) (*distribution.DebugFile, error) {
	checksum = strings.ToLower(strings.TrimSpace(checksum))
	switch {
	case md5Re.MatchString(checksum):
		return dfs.Store.FindDebugFile(ctx, DebugFileQuery{MD5: checksum})
	case sha256Re.MatchString(checksum):
		return dfs.Store.FindDebugFile(ctx, DebugFileQuery{SHA256: checksum})
	}
	return nil, errs.Field("checksum", "must be the archive's MD5 (32 hex digits) or SHA-256 (64 hex digits)")
}

// DebugFileByUUID returns the newest debug file holding a Mach-O slice or mapping file with this
// UUID, or errs.NotFound.
func (dfs *DebugFiles) DebugFileByUUID(ctx context.Context, uuid string) (*distribution.DebugFile, error) {
	uuid = strings.TrimSpace(uuid)
	if !uuidRe.MatchString(uuid) {
		return nil, errs.Field("uuid", "must be a UUID such as 0A1B2C3D-4E5F-6071-8293-A4B5C6D7E8F9")
	}
	// dSYM UUIDs are stored upper case, mapping UUIDs lower case (decisions.md): try both.
	df, err := dfs.Store.FindDebugFile(ctx, DebugFileQuery{UUID: strings.ToUpper(uuid)})
	if errs.Is(err, errs.NotFound) {
		df, err = dfs.Store.FindDebugFile(ctx, DebugFileQuery{UUID: strings.ToLower(uuid)})
	}
	return df, err
}
