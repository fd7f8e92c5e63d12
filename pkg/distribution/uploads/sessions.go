package uploads

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/blob"
	"github.com/slipwayhq/slipway/pkg/distribution"
	"github.com/slipwayhq/slipway/pkg/distribution/policy"
	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/metrics"
	"github.com/slipwayhq/slipway/pkg/signing"
)

// Resumable upload sessions: for builds too large to send in one request, or over links that
// break. The client declares the file, puts its parts straight into object storage (presigned S3
// URLs; on the filesystem backend, the service's own signed URLs), can ask which parts are done
// after a crash, and completes the session, which parses the package by ranged reads and records
// it exactly as POST /api/apps/upload does. The service never reads the file's body on this path
// but for those ranged reads.

// SessionStore keeps upload sessions.
type SessionStore interface {
	// CreateSession records a session and its object as pending, in one transaction, unless the
	// token already has maxOpen open sessions (*TooManySessionsError).
	CreateSession(ctx context.Context, s *distribution.UploadSession, maxOpen int) error
	// OpenSessions counts a token's open, unexpired sessions.
	OpenSessions(ctx context.Context, tokenID int64) (OpenSessions, error)
	GetSession(ctx context.Context, id string) (*distribution.UploadSession, error)
	// SwitchSession moves a session from state from to state to (recording resultID and errMsg),
	// and reports whether it was in from: concurrent completions do the work once.
	SwitchSession(ctx context.Context, id, from, to string, resultID int64, errMsg string) (bool, error)
	GetRelease(ctx context.Context, id int64) (*distribution.ReleaseContext, error)
	GetDebugFile(ctx context.Context, id int64) (*distribution.DebugFile, error)
}

// ChannelFinder finds the channel a channel key names (catalog.Apps).
type ChannelFinder interface {
	Channel(ctx context.Context, key string) (*distribution.ChannelContext, error)
}

// Sessions runs resumable upload sessions. Completing one records the release (Builds) or debug
// file (DebugFiles) exactly as a one-request upload does.
type Sessions struct {
	Store    SessionStore
	Storage  blob.Backend
	Channels ChannelFinder
	Objects  *Objects
	Builds   *Builds
	Debug    *DebugFiles
	// Signer signs part URLs of the filesystem backend.
	Signer *signing.Signer
	Config SessionConfig
	Log    *slog.Logger
	// Metrics counts storage failures (nil: none).
	Metrics *metrics.Metrics
	// Policy decides who may start sessions and use them: a session is its token's (an admin
	// token may use any).
	Policy *policy.Policy
}

// SessionConfig shapes upload sessions.
type SessionConfig struct {
	// TTL is how long a session may stay open (SLIPWAY_UPLOAD_SESSION_TTL).
	TTL time.Duration
	// PartSize is the size of every part but the last (grown for files that would need more than
	// 10,000 parts, S3's limit).
	PartSize int64
	// MaxUploadBytes caps a session's file.
	MaxUploadBytes int64
	// PublicURL is the base of the service's own part URLs (filesystem storage).
	PublicURL string
	// URLTTL bounds part URLs (presigned or signed), as it bounds download URLs.
	URLTTL time.Duration
	// MaxOpenPerToken caps the open sessions of one token (SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN; 0:
	// no cap). Each holds a multipart upload in storage for up to TTL.
	MaxOpenPerToken int
}

// DefaultSessionPartSize is the part size of sessions when SessionConfig.PartSize is 0.
const DefaultSessionPartSize = 16 << 20

// maxSessionParts is S3's limit on the parts of one multipart upload.
const maxSessionParts = 10_000

// NewSession is what a client declares to start a session.
type NewSession struct {
	Kind     string
	Filename string
	Size     int64
	// SHA256 is the file's checksum in hex (optional: it may come with the completion instead).
	SHA256 string
	// Fields are the upload's form fields (those of POST /api/apps/upload, or of a debug file).
	Fields map[string]string
	// AppID is the app a build without a channel_key goes into (ReleaseForm.AppID: the console's
	// upload box on an app's page); kept with the fields as appIDField.
	AppID int64
}

// appIDField keeps a session's AppID among its fields. No API client sets it: the API's session
// start takes only the upload's own fields.
const appIDField = "app_id"

// SessionPart is one part of a session as a client sees it.
type SessionPart struct {
	Number int
	Size   int64
	Done   bool
	// URL is where to PUT the part (empty for a done part or a session no longer open).
	URL string
}

var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// releaseFormOf and debugFormOf read a session's (or an upload's) form fields.
func releaseFormOf(f map[string]string) ReleaseForm {
	return ReleaseForm{ChannelKey: f["channel_key"], Name: f["name"], ReleaseType: f["release_type"], Source: f["source"],
		Changelog: f["changelog"], Branch: f["branch"], GitCommit: f["git_commit"], CIURL: f["ci_url"],
		CustomFields: f["custom_fields"], Password: f["password"],
		ReleaseVersion: f["release_version"], BuildVersion: f["build_version"], BundleID: f["bundle_id"],
		EdSignature: f["ed_signature"], TauriSignature: f["tauri_signature"], Rollout: f["rollout"], Critical: f["critical"],
		Testers: f["testers"], Groups: f["groups"], Notify: f["notify"], AllowOtherBundleID: f["allow_other_bundle_id"]}
}

func debugFormOf(f map[string]string) DebugFileForm {
	return DebugFileForm{ChannelKey: f["channel_key"], ReleaseVersion: f["release_version"], BuildVersion: f["build_version"]}
}

// sessionReleaseForm is what a session's build was started with: its fields, and its app.
func sessionReleaseForm(sess *distribution.UploadSession) ReleaseForm {
	f := releaseFormOf(sess.Fields)
	f.AppID, _ = strconv.ParseInt(sess.Fields[appIDField], 10, 64)
	return f
}

// ReleaseFormOf reads an upload's form fields.
func ReleaseFormOf(fields map[string]string) ReleaseForm { return releaseFormOf(fields) }

// sessionRetryAfter is the Retry-After of a start refused for too many open sessions, unless the
// first of them expires sooner: sessions are usually completed or aborted within minutes.
const sessionRetryAfter = time.Minute

// tooManySessions is the 429 of a token at its cap of open sessions, saying how to get out of it.
func (ss *Sessions) tooManySessions(open OpenSessions) error {
	e := errs.New(errs.TooManyRequests, "this token has %d open upload sessions, the most it may have (SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN): "+
		"complete or abort one (DELETE /api/uploads/<id>; the oldest is %s), or wait until one expires (the first at %s)",
		open.Count, open.OldestID, open.NextExpiry.UTC().Format(time.RFC3339))
	e.RetryAfter = sessionRetryAfter
	if left := time.Until(open.NextExpiry); left > 0 && left < e.RetryAfter {
		e.RetryAfter = left
	}
	return e
}

// multipart returns the storage's multipart interface, or an error when it has none.
func (ss *Sessions) multipart() (blob.Multipart, error) {
	mp, ok := ss.Storage.(blob.Multipart)
	if !ok {
		return nil, errs.New(errs.NotFound, "this server's storage takes no upload sessions; use POST /api/apps/upload")
	}
	return mp, nil
}

// StartSession starts an upload session for the context's actor: its token's, or a console
// user's upload token's. Everything that can be refused without the file is refused here, before a
// byte is sent: the fields, the size, the channel and who may upload into it.
func (ss *Sessions) StartSession(ctx context.Context, in NewSession) (*distribution.UploadSession, []SessionPart, error) {
	if err := mayUploadTo(ctx, ss.Policy, ss.Channels, in.Fields["channel_key"], in.AppID); err != nil {
		return nil, nil, err
	}
	tokenID := distribution.ActorOf(ctx).TokenID
	if tokenID == 0 {
		return nil, nil, errs.New(errs.Unauthenticated, "an upload session belongs to an API token: send one")
	}
	mp, err := ss.multipart()
	if err != nil {
		return nil, nil, err
	}
	sess := &distribution.UploadSession{TokenID: tokenID, Kind: in.Kind, Filename: cleanFilename(in.Filename), Size: in.Size,
		SHA256: strings.ToLower(strings.TrimSpace(in.SHA256)), Fields: map[string]string{}, State: distribution.SessionOpen}
	switch sess.Kind {
	case "":
		sess.Kind = distribution.SessionApp
	case distribution.SessionApp, distribution.SessionDebugFile:
	default:
		return nil, nil, errs.Field("kind", "must be app or debug_file")
	}
	switch {
	case sess.Filename == "":
		return nil, nil, errs.Field("filename", "is required: the name of the file being uploaded")
	case in.Size <= 0:
		return nil, nil, errs.Field("size", "must be the file's size in bytes, more than 0")
	case in.Size > ss.Config.MaxUploadBytes:
		return nil, nil, errs.New(errs.TooLarge, "the file is larger than the %d-byte upload limit", ss.Config.MaxUploadBytes)
	case sess.SHA256 != "" && !sha256Hex.MatchString(sess.SHA256):
		return nil, nil, errs.Field("sha256", "must be the file's SHA-256 in hex (64 characters)")
	}
	for k, v := range in.Fields {
		if v != "" && k != appIDField {
			sess.Fields[k] = v
		}
	}
	if in.AppID != 0 {
		sess.Fields[appIDField] = strconv.FormatInt(in.AppID, 10)
	}
	prefix := PackagePrefix
	if sess.Kind == distribution.SessionApp {
		f := releaseFormOf(sess.Fields)
		if _, _, err := f.check(); err != nil {
			return nil, nil, err
		}
	} else {
		prefix = DebugFilePrefix
		if _, err := ss.Channels.Channel(ctx, debugFormOf(sess.Fields).ChannelKey); err != nil {
			return nil, nil, err
		}
	}
	sess.PartSize = ss.Config.PartSize
	if sess.PartSize <= 0 {
		sess.PartSize = DefaultSessionPartSize
	}
	if need := (in.Size + maxSessionParts - 1) / maxSessionParts; need > sess.PartSize {
		sess.PartSize = (need + 1<<20 - 1) &^ (1<<20 - 1) // whole MiB
	}
	sess.ID = newSessionID()
	sess.ObjectKey = newObjectKey(prefix)
	sess.ExpiresAt = time.Now().Add(ss.Config.TTL)
	// A token at its cap is refused before storage is asked for anything; CreateSession checks
	// again, atomically, for starts that race.
	if limit := ss.Config.MaxOpenPerToken; limit > 0 {
		open, err := ss.Store.OpenSessions(ctx, tokenID)
		if err != nil {
			return nil, nil, err
		}
		if open.Count >= limit {
			return nil, nil, ss.tooManySessions(open)
		}
	}
	if sess.StorageUploadID, err = mp.CreateMultipart(ctx, sess.ObjectKey, "application/octet-stream"); err != nil {
		return nil, nil, storageErr(ss.Metrics, "create multipart", err)
	}
	if err := ss.Store.CreateSession(ctx, sess, ss.Config.MaxOpenPerToken); err != nil {
		_ = mp.AbortMultipart(context.WithoutCancel(ctx), sess.ObjectKey, sess.StorageUploadID)
		var full *TooManySessionsError
		if errors.As(err, &full) {
			return nil, nil, ss.tooManySessions(full.Open)
		}
		return nil, nil, err
	}
	parts, err := ss.sessionParts(ctx, sess, nil)
	return sess, parts, err
}

// newSessionID returns "ups_" and 130 random bits: sessions are addressed by their id alone.
func newSessionID() string {
	b := make([]byte, 17)
	_, _ = rand.Read(b)
	return "ups_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Session returns a session of the context's actor (any session for an admin) with its parts:
// done ones, and where to put the others. Another token's session is errs.NotFound.
func (ss *Sessions) Session(ctx context.Context, id string) (*distribution.UploadSession, []SessionPart, error) {
	sess, err := ss.OwnSession(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	var done map[int]int64
	if sess.State == distribution.SessionOpen {
		mp, err := ss.multipart()
		if err != nil {
			return nil, nil, err
		}
		stored, err := mp.ListParts(ctx, sess.ObjectKey, sess.StorageUploadID)
		if err != nil {
			return nil, nil, storageErr(ss.Metrics, "list parts", err)
		}
		done = map[int]int64{}
		for _, p := range stored {
			done[p.Number] = p.Size
		}
	}
	parts, err := ss.sessionParts(ctx, sess, done)
	return sess, parts, err
}

// OwnSession returns a session the context's actor may use (policy.UseSession): its own, or any
// for an admin; another's is errs.NotFound.
func (ss *Sessions) OwnSession(ctx context.Context, id string) (*distribution.UploadSession, error) {
	sess, err := ss.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := ss.Policy.Authorize(ctx, policy.UseSession, policy.OwnSession(sess.TokenID)); err != nil {
		return nil, err
	}
	return sess, nil
}

// mayUploadTo checks that the context's actor may upload into the app of the channel a key
// names, or into the app appID when key is empty, or, with neither, into any app (the upload
// finds or creates its own: making an app by upload is Upload on the installation).
func mayUploadTo(ctx context.Context, p *policy.Policy, channels ChannelFinder, key string, appID int64) error {
	if key == "" && appID != 0 {
		return p.Authorize(ctx, policy.Upload, policy.OnApp(appID))
	}
	if key == "" || channels == nil {
		return p.Authorize(ctx, policy.Upload, policy.Installation)
	}
	cc, err := channels.Channel(ctx, key)
	if err != nil {
		return err
	}
	return p.Authorize(ctx, policy.Upload, policy.OnApp(cc.App.ID))
}

// partCount is how many parts a session's file has.
func partCount(sess *distribution.UploadSession) int {
	return int((sess.Size + sess.PartSize - 1) / sess.PartSize)
}

// partSize is the size of part n (1-based): PartSize, or what is left for the last one.
func partSize(sess *distribution.UploadSession, n int) int64 {
	return min(sess.PartSize, sess.Size-int64(n-1)*sess.PartSize)
}

// sessionParts lists a session's parts; done holds the sizes of the parts stored (nil: none
// known). An open session's parts not done get a URL to PUT them.
func (ss *Sessions) sessionParts(ctx context.Context, sess *distribution.UploadSession, done map[int]int64) ([]SessionPart, error) {
	parts := make([]SessionPart, partCount(sess))
	ttl := min(ss.Config.URLTTL, time.Until(sess.ExpiresAt))
	for i := range parts {
		n := i + 1
		p := SessionPart{Number: n, Size: partSize(sess, n)}
		if size, ok := done[n]; ok && size == p.Size {
			p.Done = true
		}
		if sess.State == distribution.SessionCompleted {
			p.Done = true
		}
		if sess.State == distribution.SessionOpen && !p.Done && ttl > 0 {
			u, err := ss.partURL(ctx, sess, n, p.Size, ttl)
			if err != nil {
				return nil, err
			}
			p.URL = u
		}
		parts[i] = p
	}
	return parts, nil
}

// partURL is where a client PUTs part n: a presigned S3 URL, or the service's own signed URL.
func (ss *Sessions) partURL(ctx context.Context, sess *distribution.UploadSession, n int, size int64, ttl time.Duration) (string, error) {
	switch b := ss.Storage.(type) {
	case blob.PartPresigner:
		u, err := b.PresignPart(ctx, sess.ObjectKey, sess.StorageUploadID, n, size, ttl)
		if err != nil {
			return "", storageErr(ss.Metrics, "presign", err)
		}
		return u, nil
	case blob.PartWriter:
		q := url.Values{"t": {ss.Signer.Token("upload-part", ttl, sess.ID, strconv.Itoa(n))}}
		return fmt.Sprintf("%s/api/uploads/%s/parts/%d?%s", ss.Config.PublicURL, sess.ID, n, q.Encode()), nil
	}
	return "", fmt.Errorf("storage backend %T takes parts neither itself nor by presigned URL", ss.Storage)
}

// CheckPart checks a part URL's signature and the part it names, before its body is read (and
// before it waits for an upload slot: a request without a valid URL never takes one), and returns
// the session, whose TokenID says whose upload it is.
func (ss *Sessions) CheckPart(ctx context.Context, id string, n int, signature string, length int64) (*distribution.UploadSession, error) {
	if _, ok := ss.Storage.(blob.PartWriter); !ok || !ss.Signer.CheckToken(signature, "upload-part", id, strconv.Itoa(n)) {
		return nil, errs.New(errs.Forbidden, "this part URL is invalid or has expired; ask the session for a new one (GET /api/uploads/:id)")
	}
	sess, err := ss.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if err := usable(sess); err != nil {
		return nil, err
	}
	if n < 1 || n > partCount(sess) {
		return nil, errs.Field("part", "must be from 1 to %d", partCount(sess))
	}
	if want := partSize(sess, n); length != want {
		return nil, errs.New(errs.Invalid, "part %d must be exactly %d bytes, not %d", n, want, length)
	}
	return sess, nil
}

// PutPart stores part n of a session that CheckPart accepted, on a backend that takes parts
// itself (filesystem). The body must be exactly the part's size; contentMD5, when given (base64,
// as in a Content-MD5 header), must match it.
func (ss *Sessions) PutPart(ctx context.Context, sess *distribution.UploadSession, n int, body io.Reader, contentMD5 string) error {
	pw, ok := ss.Storage.(blob.PartWriter)
	if !ok {
		return errs.New(errs.Forbidden, "this storage takes no parts through Slipway")
	}
	want := partSize(sess, n)
	r := body
	if contentMD5 != "" {
		sum, err := base64.StdEncoding.DecodeString(contentMD5)
		if err != nil || len(sum) != md5.Size {
			return errs.Field("Content-MD5", "must be the part's MD5 in base64")
		}
		r = &md5Check{r: body, h: md5.New(), want: sum}
	}
	if _, err := pw.PutPart(ctx, sess.ObjectKey, sess.StorageUploadID, n, r, want); err != nil {
		if e, ok := errs.AsError(err); ok {
			return e
		}
		return errs.Wrap(errs.Invalid, err, "part %d was not stored: it was cut short, longer than %d bytes, or its Content-MD5 did not match", n, want)
	}
	return nil
}

// md5Check fails at the end of a body whose MD5 is not the one declared, so the part is not kept.
type md5Check struct {
	r    io.Reader
	h    hash.Hash
	want []byte
}

func (m *md5Check) Read(p []byte) (int, error) {
	n, err := m.r.Read(p)
	m.h.Write(p[:n])
	if err == io.EOF && string(m.h.Sum(nil)) != string(m.want) {
		return n, errs.New(errs.Invalid, "the part's Content-MD5 does not match its bytes")
	}
	return n, err
}

// usable refuses a session that no longer takes parts.
func usable(sess *distribution.UploadSession) error {
	switch {
	case sess.State == distribution.SessionOpen && time.Now().After(sess.ExpiresAt), sess.State == distribution.SessionExpired:
		return errs.New(errs.NotFound, "this upload session expired; start a new one")
	case sess.State == distribution.SessionOpen:
		return nil
	case sess.State == distribution.SessionCompleting:
		return errs.New(errs.Conflict, "this upload session is being completed")
	}
	return errs.New(errs.NotFound, "this upload session is %s", sess.State)
}

// SessionResult is what completing a session recorded: a release or a debug file.
type SessionResult struct {
	Release   *distribution.ReleaseContext
	DebugFile *distribution.DebugFile
}

// CompleteSession checks that every part is stored at its size, completes the object, and records
// it as POST /api/apps/upload (or /api/debug_files/upload) would. Missing or wrong parts are a 422
// naming them, and the session stays open to put them. A refused package ends the session (its
// object is deleted). Completing a completed session answers its result again. sha256, when
// given, is the file's checksum, for a client that hashed the file while sending it: it must match
// one declared at the start; a debug file needs one or the other.
func (ss *Sessions) CompleteSession(ctx context.Context, id, sha256 string) (*SessionResult, error) {
	sess, err := ss.OwnSession(ctx, id)
	if err != nil {
		return nil, err
	}
	sha256 = strings.ToLower(strings.TrimSpace(sha256))
	switch {
	case sha256 != "" && !sha256Hex.MatchString(sha256):
		return nil, errs.Field("sha256", "must be the file's SHA-256 in hex (64 characters)")
	case sha256 != "" && sess.SHA256 != "" && sha256 != sess.SHA256:
		return nil, errs.Field("sha256", "differs from the one the session was started with")
	case sha256 == "":
		sha256 = sess.SHA256
	}
	if sess.Kind == distribution.SessionDebugFile && sha256 == "" && sess.State == distribution.SessionOpen {
		return nil, errs.Field("sha256", "is required for a debug file (duplicates are found by it): give it at the start or here")
	}
	switch sess.State {
	case distribution.SessionCompleted:
		return ss.sessionResult(ctx, sess)
	case distribution.SessionFailed:
		return nil, errs.New(errs.Invalid, "this upload session failed: %s", sess.Error)
	}
	if err := usable(sess); err != nil {
		return nil, err
	}
	if ok, err := ss.Store.SwitchSession(ctx, id, distribution.SessionOpen, distribution.SessionCompleting, 0, ""); err != nil || !ok {
		if err == nil {
			err = errs.New(errs.Conflict, "this upload session is being completed or has ended")
		}
		return nil, err
	}
	parts, err := ss.checkParts(ctx, sess)
	if err == nil {
		err = storageErr(ss.Metrics, "complete multipart", ss.mustMultipart().CompleteMultipart(ctx, sess.ObjectKey, sess.StorageUploadID, parts))
	}
	if err != nil {
		// Nothing recorded: the client may put the missing parts and complete again.
		_, _ = ss.Store.SwitchSession(context.WithoutCancel(ctx), id, distribution.SessionCompleting, distribution.SessionOpen, 0, "")
		return nil, err
	}
	// The client's SHA-256 is its word: the release is recorded unverified, and the Verifier
	// computes its checksums from the stored object (Builds.Verifier is woken).
	obj := &StoredObject{Key: sess.ObjectKey, Size: sess.Size, SHA256: sha256, Filename: sess.Filename, Unverified: true}
	res := &SessionResult{}
	var resultID int64
	if sess.Kind == distribution.SessionDebugFile {
		if res.DebugFile, err = ss.Debug.UploadDebugFile(ctx, obj, debugFormOf(sess.Fields)); err == nil {
			resultID = res.DebugFile.ID
		}
	} else {
		if res.Release, err = ss.Builds.CreateRelease(ctx, obj, sessionReleaseForm(sess), sess.TokenID, ""); err == nil {
			resultID = res.Release.ID
		}
	}
	ctx = context.WithoutCancel(ctx)
	if err != nil {
		// The object was discarded by the refusal: the session is over.
		msg := "internal error"
		if e, ok := errs.AsError(err); ok {
			msg = e.Msg
		}
		_, _ = ss.Store.SwitchSession(ctx, id, distribution.SessionCompleting, distribution.SessionFailed, 0, msg)
		return nil, err
	}
	if _, err := ss.Store.SwitchSession(ctx, id, distribution.SessionCompleting, distribution.SessionCompleted, resultID, ""); err != nil {
		ss.Log.WarnContext(ctx, "recording a completed upload session failed", "error", err.Error())
	}
	return res, nil
}

func (ss *Sessions) mustMultipart() blob.Multipart { mp, _ := ss.multipart(); return mp }

// checkParts lists a session's stored parts and checks there is every one, at its size.
func (ss *Sessions) checkParts(ctx context.Context, sess *distribution.UploadSession) ([]blob.Part, error) {
	stored, err := ss.mustMultipart().ListParts(ctx, sess.ObjectKey, sess.StorageUploadID)
	if err != nil {
		return nil, storageErr(ss.Metrics, "list parts", err)
	}
	byNumber := map[int]blob.Part{}
	for _, p := range stored {
		byNumber[p.Number] = p
	}
	var missing, wrong []string
	parts := make([]blob.Part, 0, partCount(sess))
	for n := 1; n <= partCount(sess); n++ {
		p, ok := byNumber[n]
		switch {
		case !ok:
			missing = append(missing, strconv.Itoa(n))
		case p.Size != partSize(sess, n):
			wrong = append(wrong, fmt.Sprintf("%d (%d bytes, want %d)", n, p.Size, partSize(sess, n)))
		}
		parts = append(parts, p)
	}
	if len(missing)+len(wrong) > 0 {
		e := errs.New(errs.Invalid, "the upload is not complete: put the parts listed, then complete again")
		e.Entry = map[string][]string{}
		if len(missing) > 0 {
			e.Entry["missing_parts"] = []string{strings.Join(missing, ", ")}
		}
		if len(wrong) > 0 {
			e.Entry["wrong_parts"] = []string{strings.Join(wrong, "; ")}
		}
		return nil, e
	}
	return parts, nil
}

// sessionResult loads what a completed session recorded.
func (ss *Sessions) sessionResult(ctx context.Context, sess *distribution.UploadSession) (*SessionResult, error) {
	if sess.Kind == distribution.SessionDebugFile {
		df, err := ss.Store.GetDebugFile(ctx, sess.ResultID)
		return &SessionResult{DebugFile: df}, err
	}
	rc, err := ss.Store.GetRelease(ctx, sess.ResultID)
	return &SessionResult{Release: rc}, err
}

// AbortSession ends an open session and deletes what was put.
func (ss *Sessions) AbortSession(ctx context.Context, id string) error {
	sess, err := ss.OwnSession(ctx, id)
	if err != nil {
		return err
	}
	if sess.State == distribution.SessionCompleted {
		return errs.New(errs.Conflict, "this upload session is completed: delete its release instead")
	}
	if ok, err := ss.Store.SwitchSession(ctx, id, distribution.SessionOpen, distribution.SessionAborted, 0, ""); err != nil || !ok {
		if err == nil {
			err = errs.New(errs.Conflict, "this upload session is being completed or has ended")
		}
		return err
	}
	if err := ss.mustMultipart().AbortMultipart(ctx, sess.ObjectKey, sess.StorageUploadID); err != nil {
		ss.Log.WarnContext(ctx, "aborting a multipart upload failed; the collector will", "error", err.Error())
	}
	ss.Objects.Discard(ctx, sess.ObjectKey)
	return nil
}

// PartUploadOrigin is the origin ("https://host:port") browsers PUT session parts to: the S3
// endpoint's presigned URLs, or the service's public URL; "" when storage takes no sessions. The
// console's Content-Security-Policy lets its upload script connect there and nowhere else.
func (ss *Sessions) PartUploadOrigin(ctx context.Context) string {
	var raw string
	switch b := ss.Storage.(type) {
	case blob.PartPresigner:
		// Presigning is computed locally: this contacts nothing and makes no upload.
		u, err := b.PresignPart(ctx, "origin-probe", "origin-probe", 1, 1, time.Minute)
		if err != nil {
			return ""
		}
		raw = u
	case blob.PartWriter:
		raw = ss.Config.PublicURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
