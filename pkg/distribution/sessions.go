package distribution

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"encoding/base32"
	"encoding/base64"
	"fmt"
	"hash"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/errs"
	"github.com/slipwayhq/slipway/pkg/storage"
)

// Resumable upload sessions: for builds too large to send in one request, or over links that
// break. The client declares the file, puts its parts straight into object storage (presigned S3
// URLs; on the filesystem backend, the service's own signed URLs), can ask which parts are done
// after a crash, and completes the session, which parses the package by ranged reads and records
// it exactly as POST /api/apps/upload does. The service never reads the file's body on this path
// but for those ranged reads.

// SessionConfig shapes upload sessions.
type SessionConfig struct {
	// TTL is how long a session may stay open (SLIPWAY_UPLOAD_SESSION_TTL).
	TTL time.Duration
	// PartSize is the size of every part but the last (grown for files that would need more than
	// 10,000 parts, S3's limit).
	PartSize int64
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
}

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
		ReleaseVersion: f["release_version"], BuildVersion: f["build_version"], BundleID: f["bundle_id"]}
}

func debugFormOf(f map[string]string) DebugFileForm {
	return DebugFileForm{ChannelKey: f["channel_key"], ReleaseVersion: f["release_version"], BuildVersion: f["build_version"]}
}

// ReleaseFormOf reads an upload's form fields.
func ReleaseFormOf(fields map[string]string) ReleaseForm { return releaseFormOf(fields) }

// multipart returns the storage's multipart interface, or an error when it has none.
func (s *Service) multipart() (storage.Multipart, error) {
	mp, ok := s.Storage.(storage.Multipart)
	if !ok {
		return nil, errs.New(errs.NotFound, "this server's storage takes no upload sessions; use POST /api/apps/upload")
	}
	return mp, nil
}

// StartSession starts an upload session for a token. Everything that can be refused without the
// file is refused here, before a byte is sent: the fields, the size, the channel of a debug file.
func (s *Service) StartSession(ctx context.Context, tok *Token, in NewSession) (*UploadSession, []SessionPart, error) {
	mp, err := s.multipart()
	if err != nil {
		return nil, nil, err
	}
	sess := &UploadSession{TokenID: tok.ID, Kind: in.Kind, Filename: cleanFilename(in.Filename), Size: in.Size,
		SHA256: strings.ToLower(strings.TrimSpace(in.SHA256)), Fields: map[string]string{}, State: SessionOpen}
	switch sess.Kind {
	case "":
		sess.Kind = SessionApp
	case SessionApp, SessionDebugFile:
	default:
		return nil, nil, errs.Field("kind", "must be app or debug_file")
	}
	switch {
	case sess.Filename == "":
		return nil, nil, errs.Field("filename", "is required: the name of the file being uploaded")
	case in.Size <= 0:
		return nil, nil, errs.Field("size", "must be the file's size in bytes, more than 0")
	case in.Size > s.MaxUploadBytes:
		return nil, nil, errs.New(errs.TooLarge, "the file is larger than the %d-byte upload limit", s.MaxUploadBytes)
	case sess.SHA256 != "" && !sha256Hex.MatchString(sess.SHA256):
		return nil, nil, errs.Field("sha256", "must be the file's SHA-256 in hex (64 characters)")
	}
	for k, v := range in.Fields {
		if v != "" {
			sess.Fields[k] = v
		}
	}
	prefix := PackagePrefix
	if sess.Kind == SessionApp {
		f := releaseFormOf(sess.Fields)
		if _, _, err := f.check(); err != nil {
			return nil, nil, err
		}
		if f.ChannelKey != "" {
			if _, err := s.Channel(ctx, f.ChannelKey); err != nil {
				return nil, nil, err
			}
		}
	} else {
		prefix = DebugFilePrefix
		if _, err := s.Channel(ctx, debugFormOf(sess.Fields).ChannelKey); err != nil {
			return nil, nil, err
		}
	}
	sess.PartSize = s.Sessions.PartSize
	if sess.PartSize <= 0 {
		sess.PartSize = DefaultSessionPartSize
	}
	if need := (in.Size + maxSessionParts - 1) / maxSessionParts; need > sess.PartSize {
		sess.PartSize = (need + 1<<20 - 1) &^ (1<<20 - 1) // whole MiB
	}
	sess.ID = newSessionID()
	sess.ObjectKey = newObjectKey(prefix)
	sess.ExpiresAt = time.Now().Add(s.Sessions.TTL)
	if sess.StorageUploadID, err = mp.CreateMultipart(ctx, sess.ObjectKey, "application/octet-stream"); err != nil {
		return nil, nil, s.storageErr("create multipart", err)
	}
	if err := s.Store.CreateSession(ctx, sess); err != nil {
		_ = mp.AbortMultipart(context.WithoutCancel(ctx), sess.ObjectKey, sess.StorageUploadID)
		return nil, nil, err
	}
	parts, err := s.sessionParts(ctx, sess, nil)
	return sess, parts, err
}

// newSessionID returns "ups_" and 130 random bits: sessions are addressed by their id alone.
func newSessionID() string {
	b := make([]byte, 17)
	_, _ = rand.Read(b)
	return "ups_" + strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(b))
}

// Session returns a session of the token (any session for an admin token) with its parts: done
// ones, and where to put the others. Another token's session is errs.NotFound.
func (s *Service) Session(ctx context.Context, tok *Token, id string) (*UploadSession, []SessionPart, error) {
	sess, err := s.ownSession(ctx, tok, id)
	if err != nil {
		return nil, nil, err
	}
	var done map[int]int64
	if sess.State == SessionOpen {
		mp, err := s.multipart()
		if err != nil {
			return nil, nil, err
		}
		stored, err := mp.ListParts(ctx, sess.ObjectKey, sess.StorageUploadID)
		if err != nil {
			return nil, nil, s.storageErr("list parts", err)
		}
		done = map[int]int64{}
		for _, p := range stored {
			done[p.Number] = p.Size
		}
	}
	parts, err := s.sessionParts(ctx, sess, done)
	return sess, parts, err
}

func (s *Service) ownSession(ctx context.Context, tok *Token, id string) (*UploadSession, error) {
	sess, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return nil, err
	}
	if sess.TokenID != tok.ID && tok.Scope != ScopeAdmin {
		return nil, errs.New(errs.NotFound, "no such upload session")
	}
	return sess, nil
}

// partCount is how many parts a session's file has.
func (sess *UploadSession) partCount() int {
	return int((sess.Size + sess.PartSize - 1) / sess.PartSize)
}

// partSize is the size of part n (1-based): PartSize, or what is left for the last one.
func (sess *UploadSession) partSize(n int) int64 {
	return min(sess.PartSize, sess.Size-int64(n-1)*sess.PartSize)
}

// sessionParts lists a session's parts; done holds the sizes of the parts stored (nil: none
// known). An open session's parts not done get a URL to PUT them.
func (s *Service) sessionParts(ctx context.Context, sess *UploadSession, done map[int]int64) ([]SessionPart, error) {
	parts := make([]SessionPart, sess.partCount())
	ttl := min(s.Downloads.TTL, time.Until(sess.ExpiresAt))
	for i := range parts {
		n := i + 1
		p := SessionPart{Number: n, Size: sess.partSize(n)}
		if size, ok := done[n]; ok && size == p.Size {
			p.Done = true
		}
		if sess.State == SessionCompleted {
			p.Done = true
		}
		if sess.State == SessionOpen && !p.Done && ttl > 0 {
			u, err := s.partURL(ctx, sess, n, p.Size, ttl)
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
func (s *Service) partURL(ctx context.Context, sess *UploadSession, n int, size int64, ttl time.Duration) (string, error) {
	switch b := s.Storage.(type) {
	case storage.PartPresigner:
		u, err := b.PresignPart(ctx, sess.ObjectKey, sess.StorageUploadID, n, size, ttl)
		if err != nil {
			return "", s.storageErr("presign", err)
		}
		return u, nil
	case storage.PartWriter:
		q := url.Values{"t": {s.Signer.Token("upload-part", ttl, sess.ID, strconv.Itoa(n))}}
		return fmt.Sprintf("%s/api/uploads/%s/parts/%d?%s", s.Downloads.PublicURL, sess.ID, n, q.Encode()), nil
	}
	return "", fmt.Errorf("storage backend %T takes parts neither itself nor by presigned URL", s.Storage)
}

// PutPart stores part n of a session on a backend that takes parts itself (filesystem), for a
// client that holds the part's signed URL. The body must be exactly the part's size; contentMD5,
// when given (base64, as in a Content-MD5 header), must match it.
func (s *Service) PutPart(ctx context.Context, id string, n int, signature string, body io.Reader, length int64, contentMD5 string) error {
	pw, ok := s.Storage.(storage.PartWriter)
	if !ok || !s.Signer.CheckToken(signature, "upload-part", id, strconv.Itoa(n)) {
		return errs.New(errs.Forbidden, "this part URL is invalid or has expired; ask the session for a new one (GET /api/uploads/:id)")
	}
	sess, err := s.Store.GetSession(ctx, id)
	if err != nil {
		return err
	}
	if err := sess.usable(); err != nil {
		return err
	}
	if n < 1 || n > sess.partCount() {
		return errs.Field("part", "must be from 1 to %d", sess.partCount())
	}
	want := sess.partSize(n)
	if length != want {
		return errs.New(errs.Invalid, "part %d must be exactly %d bytes, not %d", n, want, length)
	}
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
func (sess *UploadSession) usable() error {
	switch {
	case sess.State == SessionOpen && time.Now().After(sess.ExpiresAt), sess.State == SessionExpired:
		return errs.New(errs.NotFound, "this upload session expired; start a new one")
	case sess.State == SessionOpen:
		return nil
	case sess.State == SessionCompleting:
		return errs.New(errs.Conflict, "this upload session is being completed")
	}
	return errs.New(errs.NotFound, "this upload session is %s", sess.State)
}

// SessionResult is what completing a session recorded: a release or a debug file.
type SessionResult struct {
	Release   *ReleaseContext
	DebugFile *DebugFile
}

// CompleteSession checks that every part is stored at its size, completes the object, and records
// it as POST /api/apps/upload (or /api/debug_files/upload) would. Missing or wrong parts are a 422
// naming them, and the session stays open to put them. A refused package ends the session (its
// object is deleted). Completing a completed session answers its result again. sha256, when
// given, is the file's checksum, for a client that hashed the file while sending it: it must match
// one declared at the start; a debug file needs one or the other.
func (s *Service) CompleteSession(ctx context.Context, tok *Token, id, sha256 string) (*SessionResult, error) {
	sess, err := s.ownSession(ctx, tok, id)
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
	if sess.Kind == SessionDebugFile && sha256 == "" && sess.State == SessionOpen {
		return nil, errs.Field("sha256", "is required for a debug file (duplicates are found by it): give it at the start or here")
	}
	switch sess.State {
	case SessionCompleted:
		return s.sessionResult(ctx, sess)
	case SessionFailed:
		return nil, errs.New(errs.Invalid, "this upload session failed: %s", sess.Error)
	}
	if err := sess.usable(); err != nil {
		return nil, err
	}
	if ok, err := s.Store.SwitchSession(ctx, id, SessionOpen, SessionCompleting, 0, ""); err != nil || !ok {
		if err == nil {
			err = errs.New(errs.Conflict, "this upload session is being completed or has ended")
		}
		return nil, err
	}
	parts, err := s.checkParts(ctx, sess)
	if err == nil {
		err = s.storageErr("complete multipart", s.mustMultipart().CompleteMultipart(ctx, sess.ObjectKey, sess.StorageUploadID, parts))
	}
	if err != nil {
		// Nothing recorded: the client may put the missing parts and complete again.
		_, _ = s.Store.SwitchSession(context.WithoutCancel(ctx), id, SessionCompleting, SessionOpen, 0, "")
		return nil, err
	}
	obj := &StoredObject{Key: sess.ObjectKey, Size: sess.Size, SHA256: sha256, Filename: sess.Filename}
	res := &SessionResult{}
	var resultID int64
	if sess.Kind == SessionDebugFile {
		if res.DebugFile, err = s.UploadDebugFile(ctx, obj, debugFormOf(sess.Fields)); err == nil {
			resultID = res.DebugFile.ID
		}
	} else {
		if res.Release, err = s.CreateRelease(ctx, obj, releaseFormOf(sess.Fields), sess.TokenID, ""); err == nil {
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
		_, _ = s.Store.SwitchSession(ctx, id, SessionCompleting, SessionFailed, 0, msg)
		return nil, err
	}
	if _, err := s.Store.SwitchSession(ctx, id, SessionCompleting, SessionCompleted, resultID, ""); err != nil {
		s.Log.WarnContext(ctx, "recording a completed upload session failed", "error", err.Error())
	}
	return res, nil
}

func (s *Service) mustMultipart() storage.Multipart { mp, _ := s.multipart(); return mp }

// checkParts lists a session's stored parts and checks there is every one, at its size.
func (s *Service) checkParts(ctx context.Context, sess *UploadSession) ([]storage.Part, error) {
	stored, err := s.mustMultipart().ListParts(ctx, sess.ObjectKey, sess.StorageUploadID)
	if err != nil {
		return nil, s.storageErr("list parts", err)
	}
	byNumber := map[int]storage.Part{}
	for _, p := range stored {
		byNumber[p.Number] = p
	}
	var missing, wrong []string
	parts := make([]storage.Part, 0, sess.partCount())
	for n := 1; n <= sess.partCount(); n++ {
		p, ok := byNumber[n]
		switch {
		case !ok:
			missing = append(missing, strconv.Itoa(n))
		case p.Size != sess.partSize(n):
			wrong = append(wrong, fmt.Sprintf("%d (%d bytes, want %d)", n, p.Size, sess.partSize(n)))
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
func (s *Service) sessionResult(ctx context.Context, sess *UploadSession) (*SessionResult, error) {
	if sess.Kind == SessionDebugFile {
		df, err := s.Store.GetDebugFile(ctx, sess.ResultID)
		return &SessionResult{DebugFile: df}, err
	}
	rc, err := s.Store.GetRelease(ctx, sess.ResultID)
	return &SessionResult{Release: rc}, err
}

// AbortSession ends an open session and deletes what was put.
func (s *Service) AbortSession(ctx context.Context, tok *Token, id string) error {
	sess, err := s.ownSession(ctx, tok, id)
	if err != nil {
		return err
	}
	if sess.State == SessionCompleted {
		return errs.New(errs.Conflict, "this upload session is completed: delete its release instead")
	}
	if ok, err := s.Store.SwitchSession(ctx, id, SessionOpen, SessionAborted, 0, ""); err != nil || !ok {
		if err == nil {
			err = errs.New(errs.Conflict, "this upload session is being completed or has ended")
		}
		return err
	}
	if err := s.mustMultipart().AbortMultipart(ctx, sess.ObjectKey, sess.StorageUploadID); err != nil {
		s.Log.WarnContext(ctx, "aborting a multipart upload failed; the collector will", "error", err.Error())
	}
	s.Discard(ctx, sess.ObjectKey)
	return nil
}

// PartUploadOrigin is the origin ("https://host:port") browsers PUT session parts to: the S3
// endpoint's presigned URLs, or the service's public URL; "" when storage takes no sessions. The
// console's Content-Security-Policy lets its upload script connect there and nowhere else.
func (s *Service) PartUploadOrigin(ctx context.Context) string {
	var raw string
	switch b := s.Storage.(type) {
	case storage.PartPresigner:
		// Presigning is computed locally: this contacts nothing and makes no upload.
		u, err := b.PresignPart(ctx, "origin-probe", "origin-probe", 1, 1, time.Minute)
		if err != nil {
			return ""
		}
		raw = u
	case storage.PartWriter:
		raw = s.Downloads.PublicURL
	}
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
