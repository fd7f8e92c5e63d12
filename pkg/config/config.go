// Package config reads Slipway's configuration from the environment, once, at start. Every value is
// validated there; an invalid one is an error naming the variable, so the process exits with one
// clear line instead of failing later.
package config

import (
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math"
	"net"
	netmail "net/mail"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/slipwayhq/slipway/pkg/edsign"
	"github.com/slipwayhq/slipway/pkg/mail"
	"github.com/slipwayhq/slipway/pkg/repokey"
)

// Config is the whole configuration of a Slipway process.
type Config struct {
	// Addr is the listen address (SLIPWAY_ADDR).
	Addr string
	// InternalAddr is the internal listener's address (SLIPWAY_INTERNAL_ADDR): /metrics and the
	// detailed readiness (/internal/readyz) go there, off the public router. Empty: they are
	// served on Addr (a single-port setup; keep the ingress from exposing them).
	InternalAddr string
	// MigrateOnStart makes serve apply pending migrations itself (SLIPWAY_MIGRATE_ON_START); off,
	// it waits for the schema it needs (a hook Job migrates), answering 503 meanwhile.
	MigrateOnStart bool
	// CreateDatabase lets serve and `migrate up` create the database named in SLIPWAY_DATABASE_URL
	// when it does not exist (SLIPWAY_CREATE_DATABASE; off by default, so that a misspelt name is
	// an error instead of a new, empty database). `make run` turns it on.
	CreateDatabase bool
	// MigrateLockTimeout is how long one migration statement waits for a lock before it gives up
	// (SLIPWAY_MIGRATE_LOCK_TIMEOUT): the queries behind it wait no longer than that.
	MigrateLockTimeout time.Duration
	// MigrateTimeout bounds how long a migration keeps retrying after it gave up waiting for a
	// lock (SLIPWAY_MIGRATE_TIMEOUT); it stays below the chart's migration Job deadline.
	MigrateTimeout time.Duration
	// DBMaxConns is the size of each replica's Postgres connection pool (SLIPWAY_DB_MAX_CONNS).
	DBMaxConns int
	// AccessLogOff turns the one-line-per-request log off (SLIPWAY_ACCESS_LOG=false) but for
	// requests answered 5xx; the other log lines follow SLIPWAY_LOG_LEVEL. (Off, not on, so that
	// the zero Config logs as the default does.)
	AccessLogOff bool
	// PublicURL is the base of every absolute URL the API returns, without a trailing slash
	// (SLIPWAY_PUBLIC_URL). It is never derived from a request's Host header.
	PublicURL string
	// DatabaseURL is the Postgres connection URL (SLIPWAY_DATABASE_URL).
	DatabaseURL string
	// StorageURL selects the object store: file:///path or s3://bucket/prefix?... (SLIPWAY_STORAGE_URL).
	StorageURL string
	// MaxUploadBytes is the largest accepted upload (SLIPWAY_MAX_UPLOAD_BYTES).
	MaxUploadBytes int64
	// MaxConcurrentUploads caps uploads being received per replica
	// (SLIPWAY_MAX_CONCURRENT_UPLOADS); beyond it uploads wait in a queue.
	MaxConcurrentUploads int
	// UploadsPerToken caps the slots one token's uploads hold at once on a replica
	// (SLIPWAY_UPLOADS_PER_TOKEN; 0 in the environment: three quarters of the slots): beyond it
	// they wait in line, so one client cannot take every slot.
	UploadsPerToken int
	// UploadMinRate is the slowest an upload may arrive, in bytes per second, averaged over each
	// UploadIdleTimeout span after its first (SLIPWAY_UPLOAD_MIN_RATE; 0 turns it off).
	UploadMinRate int64
	// UploadQueueLength is how many uploads may wait for a slot (SLIPWAY_UPLOAD_QUEUE_LENGTH); an
	// upload that finds the queue full gets 429 with Retry-After.
	UploadQueueLength int
	// UploadQueueTimeout is how long an upload waits for a slot before 429
	// (SLIPWAY_UPLOAD_QUEUE_TIMEOUT).
	UploadQueueTimeout time.Duration
	// UploadMemory bounds the bytes all uploads' storage buffers hold at once
	// (SLIPWAY_UPLOAD_MEMORY): beyond it uploads slow down instead of failing.
	UploadMemory int64
	// ParseMemory is SLIPWAY_PARSE_MEMORY: the bytes all parses of packages on a replica may
	// allocate together (0: derived from the memory limit, ParseBudget).
	ParseMemory int64
	// MemoryLimit is the replica's memory limit as the process starts: GOMEMLIMIT, else the
	// cgroup's memory.max less a tenth (what the Go runtime does not count); 0 when neither says.
	MemoryLimit int64
	// PresignTTL is the lifetime of presigned and signed download URLs (SLIPWAY_PRESIGN_TTL).
	PresignTTL time.Duration
	// CDNURL, when set, makes downloads of public channels redirect to CDNURL/<object key>
	// (SLIPWAY_CDN_URL); protected channels' objects and debug files never go there.
	CDNURL string
	// Secret is the HMAC key for signed filesystem URLs and cookies (SLIPWAY_SECRET). When unset a
	// random one is generated and SecretGenerated is true: fine for one process, wrong for replicas.
	Secret          []byte
	SecretGenerated bool
	// Warnings are what the configuration allows but an operator should change (a key file other
	// users can read); serve logs each at start.
	Warnings []string
	// SecretPrevious are former secrets still accepted when verifying signatures, never used to
	// sign (SLIPWAY_SECRET_PREVIOUS, comma-separated): the window of a key rotation.
	SecretPrevious [][]byte
	// LogLevel and LogFormat configure slog (SLIPWAY_LOG_LEVEL, SLIPWAY_LOG_FORMAT: json or text).
	LogLevel  slog.Level
	LogFormat string
	// Location renders timestamps (SLIPWAY_TIMEZONE, an IANA name; default UTC).
	Location *time.Location
	// GCInterval is how often serve runs the storage collector (SLIPWAY_GC_INTERVAL; 0 disables).
	GCInterval time.Duration
	// GCGrace is how old a pending (unfinished) upload's object must be before it is collected
	// (SLIPWAY_GC_GRACE). It must exceed the longest upload.
	GCGrace time.Duration
	// TrustedProxies are the networks whose X-Forwarded-For and X-Real-IP are believed for the
	// client address (SLIPWAY_TRUSTED_PROXIES, comma-separated CIDRs; default none: the peer's
	// address is the client's, and forwarded headers are ignored).
	TrustedProxies []string
	// UploadIdleTimeout ends an upload whose client sends nothing for this long
	// (SLIPWAY_UPLOAD_IDLE_TIMEOUT), so a stalled client cannot hold an upload slot forever.
	UploadIdleTimeout time.Duration
	// DrainTimeout bounds how long serve waits for in-flight requests on SIGTERM
	// (SLIPWAY_DRAIN_TIMEOUT).
	DrainTimeout time.Duration
	// UploadSessionTTL is how long an upload session may stay open (SLIPWAY_UPLOAD_SESSION_TTL).
	UploadSessionTTL time.Duration
	// TesterSessionTTL is how long a tester's session lasts (SLIPWAY_TESTER_SESSION_TTL).
	TesterSessionTTL time.Duration
	// UploadSessionsPerToken caps the open upload sessions of one token
	// (SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN): each holds a multipart upload in storage until it ends.
	UploadSessionsPerToken int
	// ReadCacheBytes bounds the per-replica cache of channel views behind latest, versions and
	// version_exist (SLIPWAY_READ_CACHE_BYTES; 0 turns it off).
	ReadCacheBytes int64
	// ReadCacheTTL bounds how old a cached view may be (SLIPWAY_READ_CACHE_TTL): what a lost
	// change notification can cost.
	ReadCacheTTL time.Duration
	// RetentionInterval is how often a replica enforces retention (SLIPWAY_RETENTION_INTERVAL; 0
	// turns enforcement off on this replica).
	RetentionInterval time.Duration
	// Retention defaults for schemes and channels that set nothing (SLIPWAY_RETENTION_*; 0 = off).
	RetentionKeepBuilds, RetentionMaxAgeDays, RetentionExpiredProfileDays int
	RetentionMaxBytes                                                     int64
	// Webhook delivery (SLIPWAY_WEBHOOK_*).
	WebhookAllowPrivate bool
	WebhookRetryBase    time.Duration
	WebhookMaxAttempts  int
	WebhookPoll         time.Duration
	WebhookTimeout      time.Duration
	// DownloadFlushInterval is how often a replica writes its download counts.
	DownloadFlushInterval time.Duration
	// UDIDOrganization names the operator in the UDID profile (SLIPWAY_UDID_ORGANIZATION).
	UDIDOrganization string
	// UDIDSigningCert and UDIDSigningKey are the PEM files that sign the UDID profile
	// (SLIPWAY_UDID_SIGNING_CERT, SLIPWAY_UDID_SIGNING_KEY; UDIDSigner reads them).
	UDIDSigningCert, UDIDSigningKey string
	// SparkleKey, when set, is the operator's Ed25519 key with which Slipway signs the macOS
	// packages that arrive without a Sparkle signature (SLIPWAY_SPARKLE_KEY_FILE, read at start).
	SparkleKey *edsign.Key
	// RepoKey, when set, holds the OpenPGP keys that sign the channels' APT and DNF repositories
	// (SLIPWAY_REPO_KEY_FILE, read at start); nil: the repositories answer 404 saying so.
	RepoKey *repokey.Keyring
	// OIDC is the console's identity provider (SLIPWAY_OIDC_*); Issuer "" turns it off.
	OIDC OIDCConfig
	// Mail is the SMTP relay and the mail sender's settings (SLIPWAY_SMTP_*, SLIPWAY_MAIL_*).
	Mail MailConfig
}

// MailConfig is how mail leaves: the relay, its credentials and the sender's pace. On is false
// when SLIPWAY_SMTP_URL is unset: tester features work, mails wait in the outbox, none is sent.
type MailConfig struct {
	On    bool
	Relay mail.Relay
	// Password is read from SLIPWAY_SMTP_PASSWORD_FILE at start; it prints as [redacted].
	Password mail.Password
	// RootCAs verify the relay's certificate (SLIPWAY_SMTP_CA_FILE); nil: the system's roots.
	RootCAs *x509.CertPool
	// From is SLIPWAY_MAIL_FROM.
	From *netmail.Address
	// Timeout bounds the connection and each SMTP command (SLIPWAY_SMTP_TIMEOUT).
	Timeout time.Duration
	// Rate is the messages per second a replica hands to the relay (SLIPWAY_MAIL_RATE).
	Rate float64
	// RetryBase, MaxAttempts and Poll shape retries and polling (SLIPWAY_MAIL_RETRY_BASE,
	// SLIPWAY_MAIL_MAX_ATTEMPTS, SLIPWAY_MAIL_POLL_INTERVAL).
	RetryBase   time.Duration
	MaxAttempts int
	Poll        time.Duration
}

// OIDCConfig is an OpenID Connect provider for the console's sign-in.
type OIDCConfig struct {
	Issuer, ClientID, ClientSecret string
	// GroupsClaim names the ID token claim listing the user's groups.
	GroupsClaim                                string
	AllowedDomains, AllowedGroups, AdminGroups []string
	// AllowAny admits every account of the issuer (SLIPWAY_OIDC_ALLOW_ANY). Without it, or
	// allowed domains or groups, nobody may sign in with the provider (and Load warns).
	AllowAny bool
	// TrustEmails lets an email without an email_verified claim pass the allowed-domain check
	// (SLIPWAY_OIDC_TRUST_EMAILS).
	TrustEmails bool
}

// Var describes one environment variable, for validation and documentation.
type Var struct {
	Name    string
	Default string
	Help    string
}

// Vars lists every variable Slipway reads, in the order the README documents them.
var Vars = []Var{
	{"SLIPWAY_ADDR", ":8080", "listen address"},
	{"SLIPWAY_INTERNAL_ADDR", "", "listen address of /metrics and the detailed readiness /internal/readyz (e.g. :9090), kept off the public port; empty: both are served on SLIPWAY_ADDR"},
	{"SLIPWAY_MIGRATE_ON_START", "true", "serve applies pending migrations at start; false: it waits for the schema it needs (migrated by `slipway migrate up`, the chart's hook Job), answering 503 meanwhile"},
	{"SLIPWAY_CREATE_DATABASE", "false", "serve and `slipway migrate up` create the database of SLIPWAY_DATABASE_URL when it does not exist (`make run` sets it); off: a missing database is an error, and no other command ever creates one"},
	{"SLIPWAY_MIGRATE_LOCK_TIMEOUT", "5s", "how long a migration statement waits for a table lock (Postgres lock_timeout) before it gives up and is retried, so that queries never queue behind it for longer"},
	{"SLIPWAY_MIGRATE_TIMEOUT", "3m", "how long a migration keeps retrying (with backoff) after giving up on a lock before it fails; keep it below the migration Job's deadline"},
	{"SLIPWAY_DB_MAX_CONNS", "8", "Postgres connections each replica's pool may open (replicas x this must fit the server's max_connections)"},
	{"SLIPWAY_ACCESS_LOG", "true", "log one line per request (false: none, whatever SLIPWAY_LOG_LEVEL says; connection and error lines stay)"},
	{"SLIPWAY_PUBLIC_URL", "http://localhost:8080", "base of every absolute URL the API returns"},
	{"SLIPWAY_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/slipway?sslmode=disable", "Postgres (the database must exist unless SLIPWAY_CREATE_DATABASE is true)"},
	{"SLIPWAY_STORAGE_URL", "file://./data/objects", "file:///abs/path or s3://BUCKET[/PREFIX]?region=R&endpoint=URL&path_style=true"},
	{"SLIPWAY_MAX_UPLOAD_BYTES", "4294967296", "larger uploads get 413"},
	{"SLIPWAY_MAX_CONCURRENT_UPLOADS", "16", "uploads received at once per replica; more wait in a queue"},
	{"SLIPWAY_UPLOADS_PER_TOKEN", "0", "slots one token's uploads may hold at once per replica; its others wait in line (0: three quarters of SLIPWAY_MAX_CONCURRENT_UPLOADS)"},
	{"SLIPWAY_UPLOAD_MIN_RATE", "16384", "bytes per second an upload must average over each SLIPWAY_UPLOAD_IDLE_TIMEOUT span after its first; a slower one is cut (0: off)"},
	{"SLIPWAY_UPLOAD_QUEUE_LENGTH", "256", "uploads that may wait for a slot; beyond it 429 with Retry-After"},
	{"SLIPWAY_UPLOAD_QUEUE_TIMEOUT", "2m", "how long an upload waits for a slot before 429"},
	{"SLIPWAY_UPLOAD_MEMORY", "134217728", "bytes of storage buffers all uploads hold at once (128 MiB); beyond it uploads slow down"},
	{"SLIPWAY_PARSE_MEMORY", "0", "bytes all package parses of a replica may allocate at once; beyond it parses wait (0: three quarters of what GOMEMLIMIT or the cgroup's limit leaves beyond the other budgets, at least 176 MiB; 192 MiB with no limit)"},
	{"SLIPWAY_PRESIGN_TTL", "15m", "lifetime of presigned download URLs"},
	{"SLIPWAY_CDN_URL", "", "when set, downloads of public channels redirect to CDN_URL/<object key> (a password channel's objects and debug files are presigned, never on the CDN)"},
	{"SLIPWAY_SECRET", "(generated per process)", "HMAC key for signed URLs and cookies; share it across replicas"},
	{"SLIPWAY_SECRET_PREVIOUS", "", "comma-separated keys also accepted when checking signatures (never used to sign): a SLIPWAY_SECRET rotation's window"},
	{"SLIPWAY_LOG_LEVEL", "info", "debug, info, warn or error"},
	{"SLIPWAY_LOG_FORMAT", "json", "json or text"},
	{"SLIPWAY_TIMEZONE", "UTC", "zone timestamps are rendered in"},
	{"SLIPWAY_GC_INTERVAL", "10m", "how often serve collects orphaned objects (0 disables)"},
	{"SLIPWAY_GC_GRACE", "24h", "age after which an unfinished upload's object is collected"},
	{"SLIPWAY_DRAIN_TIMEOUT", "30s", "how long shutdown waits for in-flight requests"},
	{"SLIPWAY_UPLOAD_IDLE_TIMEOUT", "60s", "an upload whose client sends nothing for this long is dropped; other bodies must arrive within it"},
	{"SLIPWAY_UPLOAD_SESSION_TTL", "24h", "how long a resumable upload session (POST /api/uploads) may stay open before it expires and its parts are deleted"},
	{"SLIPWAY_TESTER_SESSION_TTL", "720h", "how long a tester stays signed in after using a mailed sign-in link (1h to 8760h); signing out, or leaving every group, ends it sooner"},
	{"SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN", "32", "open upload sessions one token may have at once; the next start is 429 until one is completed, aborted or expired"},
	{"SLIPWAY_READ_CACHE_BYTES", "67108864", "bytes of channel views and encoded answers each replica caches for latest, versions and version_exist (64 MiB; 0 turns the cache off)"},
	{"SLIPWAY_READ_CACHE_TTL", "5s", "the oldest a cached view may be, should a change notification be lost"},
	{"SLIPWAY_RETENTION_INTERVAL", "10m", "how often each replica enforces retention policies (0 disables it on that replica)"},
	{"SLIPWAY_RETENTION_KEEP_BUILDS", "0", "default for schemes and channels that set none: keep the newest N builds per channel (0 = all)"},
	{"SLIPWAY_RETENTION_MAX_AGE_DAYS", "0", "default: delete builds older than this many days (0 = never)"},
	{"SLIPWAY_RETENTION_MAX_BYTES", "0", "default: delete a channel's oldest builds while its packages total more (0 = no cap)"},
	{"SLIPWAY_RETENTION_EXPIRED_PROFILE_DAYS", "0", "default: delete iOS builds whose provisioning profile expired this many days ago (0 = never)"},
	{"SLIPWAY_WEBHOOK_ALLOW_PRIVATE", "false", "let webhooks target loopback, private and link-local addresses (off: SSRF protection)"},
	{"SLIPWAY_WEBHOOK_RETRY_BASE", "10s", "delay before a failed webhook delivery's first retry; it doubles per attempt, up to an hour"},
	{"SLIPWAY_WEBHOOK_MAX_ATTEMPTS", "15", "attempts before a delivery is marked failed (15 at the defaults: about 9 hours)"},
	{"SLIPWAY_WEBHOOK_POLL_INTERVAL", "2s", "how often each replica looks for due webhook deliveries"},
	{"SLIPWAY_WEBHOOK_TIMEOUT", "10s", "time limit of one webhook request"},
	{"SLIPWAY_DOWNLOAD_FLUSH_INTERVAL", "2s", "how often each replica writes the downloads it counted"},
	{"SLIPWAY_UDID_ORGANIZATION", "Slipway", "the organization iOS shows when it installs the UDID profile (/udid)"},
	{"SLIPWAY_UDID_SIGNING_CERT", "", "PEM file of the certificate (then its chain) that signs the UDID profile, so iOS shows it as verified"},
	{"SLIPWAY_UDID_SIGNING_KEY", "", "PEM file of that certificate's private key (PKCS #8, PKCS #1 or EC)"},
	{"SLIPWAY_OIDC_ISSUER", "", "the console's OpenID Connect provider (its issuer URL); empty: sign in only with `slipway admin login-link`"},
	{"SLIPWAY_OIDC_CLIENT_ID", "", "the client registered at the provider, with redirect URI PUBLIC_URL/console/callback"},
	{"SLIPWAY_OIDC_CLIENT_SECRET", "", "that client's secret"},
	{"SLIPWAY_OIDC_ALLOWED_DOMAINS", "", "comma-separated email domains allowed to sign in (verified emails only: email_verified true, see SLIPWAY_OIDC_TRUST_EMAILS)"},
	{"SLIPWAY_OIDC_ALLOWED_GROUPS", "", "comma-separated groups of which a user must be in one"},
	{"SLIPWAY_OIDC_ALLOW_ANY", "false", "true: every account of the issuer may sign in (as a viewer). Without it, SLIPWAY_OIDC_ALLOWED_DOMAINS or SLIPWAY_OIDC_ALLOWED_GROUPS nobody may sign in with the provider"},
	{"SLIPWAY_OIDC_TRUST_EMAILS", "false", "true: an email the provider sends without an email_verified claim counts as verified for SLIPWAY_OIDC_ALLOWED_DOMAINS (an explicit false never does); docs/deploy.md, Console sign-in, says which providers need it"},
	{"SLIPWAY_OIDC_ADMIN_GROUPS", "", "comma-separated groups whose members are console admins, re-evaluated at every sign-in (leaving them takes the admin role back); nobody else becomes an admin by signing in"},
	{"SLIPWAY_OIDC_GROUPS_CLAIM", "groups", "the ID token claim that lists a user's groups"},
	{"SLIPWAY_SPARKLE_KEY_FILE", "", "file of the Ed25519 private key with which Slipway signs the macOS packages of channels an admin switched sparkle_signing on for, uploaded without a Sparkle signature (generate_keys -x export, base64 or PEM); empty: Slipway signs nothing"},
	{"SLIPWAY_REPO_KEY_FILE", "", "file of the armored OpenPGP private key(s) that sign the channels' APT and DNF repositories (`slipway repo-key generate` makes one); a second key is published beside the first, which signs (rotation, docs/repositories.md); empty: the repositories answer 404"},
	{"SLIPWAY_SMTP_URL", "", "the SMTP relay mail leaves through: smtps://user@host:465 (implicit TLS), smtp://user@host:587 (STARTTLS, required: a relay that does not offer it gets no mail) or smtp+insecure://host:port (no TLS, for a relay on loopback or inside the cluster; a user only on loopback); empty: mail is off (tester features work, the pages say mail is off)"},
	{"SLIPWAY_SMTP_PASSWORD_FILE", "", "file holding the relay's password for the URL's user (read at start, never logged); required when the URL names a user"},
	{"SLIPWAY_SMTP_CA_FILE", "", "PEM file of the CAs that sign the relay's certificate, instead of the system's roots (a private relay); the certificate is always verified"},
	{"SLIPWAY_SMTP_TIMEOUT", "30s", "time limit of the connection to the relay and of each SMTP command"},
	{"SLIPWAY_MAIL_FROM", "", "the sender of every mail: an address, optionally with a name (\"Slipway <builds@example.com>\"); required with SLIPWAY_SMTP_URL, and its domain ends every Message-ID"},
	{"SLIPWAY_MAIL_RATE", "10", "messages per second each replica hands to the relay, at most"},
	{"SLIPWAY_MAIL_RETRY_BASE", "30s", "delay before a mail's first retry when the relay refused it or was unreachable; it doubles per attempt, up to an hour"},
	{"SLIPWAY_MAIL_MAX_ATTEMPTS", "12", "attempts before a mail is given up (12 at the defaults: about six hours of a relay down); a permanent refusal (5xx) is given up after 3"},
	{"SLIPWAY_MAIL_POLL_INTERVAL", "5s", "how often each replica looks for due mail (a new mail wakes the sender of the replica that wrote it at once)"},
	{"SLIPWAY_TRUSTED_PROXIES", "", "comma-separated CIDRs of the reverse proxies (the ingress) whose X-Forwarded-For and X-Real-IP are believed; empty: none, the peer is the client"},
}

// Load reads the configuration through getenv (os.Getenv in production).
func Load(getenv func(string) string) (*Config, error) {
	get := func(name string) string {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v
		}
		for _, v := range Vars {
			if v.Name == name && !strings.HasPrefix(v.Default, "(") {
				return v.Default
			}
		}
		return ""
	}
	c := &Config{Addr: get("SLIPWAY_ADDR"), InternalAddr: get("SLIPWAY_INTERNAL_ADDR"), DatabaseURL: get("SLIPWAY_DATABASE_URL"), StorageURL: get("SLIPWAY_STORAGE_URL")}
	var err error

	if c.PublicURL, err = baseURL("SLIPWAY_PUBLIC_URL", get("SLIPWAY_PUBLIC_URL")); err != nil {
		return nil, err
	}
	if c.InternalAddr != "" {
		if _, _, perr := net.SplitHostPort(c.InternalAddr); perr != nil {
			return nil, fmt.Errorf("SLIPWAY_INTERNAL_ADDR: want host:port or :port, got %q", c.InternalAddr)
		}
		if c.InternalAddr == c.Addr {
			return nil, fmt.Errorf("SLIPWAY_INTERNAL_ADDR: must differ from SLIPWAY_ADDR (%s)", c.Addr)
		}
	}
	if u, perr := url.Parse(c.DatabaseURL); perr != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		return nil, fmt.Errorf("SLIPWAY_DATABASE_URL: must be a postgres:// URL")
	}
	if u, perr := url.Parse(c.StorageURL); perr != nil || (u.Scheme != "file" && u.Scheme != "s3") {
		return nil, fmt.Errorf("SLIPWAY_STORAGE_URL: must be a file:// or s3:// URL")
	}
	if c.MaxUploadBytes, err = positiveInt("SLIPWAY_MAX_UPLOAD_BYTES", get("SLIPWAY_MAX_UPLOAD_BYTES")); err != nil {
		return nil, err
	}
	n, err := positiveInt("SLIPWAY_MAX_CONCURRENT_UPLOADS", get("SLIPWAY_MAX_CONCURRENT_UPLOADS"))
	if err != nil {
		return nil, err
	}
	c.MaxConcurrentUploads = int(n)
	if n, err = nonNegativeInt("SLIPWAY_UPLOADS_PER_TOKEN", get("SLIPWAY_UPLOADS_PER_TOKEN")); err != nil {
		return nil, err
	}
	switch {
	case n == 0:
		c.UploadsPerToken = max(1, c.MaxConcurrentUploads*3/4)
	case n > int64(c.MaxConcurrentUploads):
		return nil, fmt.Errorf("SLIPWAY_UPLOADS_PER_TOKEN: must be at most SLIPWAY_MAX_CONCURRENT_UPLOADS (%d), got %d", c.MaxConcurrentUploads, n)
	default:
		c.UploadsPerToken = int(n)
	}
	if c.UploadMinRate, err = nonNegativeInt("SLIPWAY_UPLOAD_MIN_RATE", get("SLIPWAY_UPLOAD_MIN_RATE")); err != nil {
		return nil, err
	}
	if n, err = positiveInt("SLIPWAY_UPLOAD_QUEUE_LENGTH", get("SLIPWAY_UPLOAD_QUEUE_LENGTH")); err != nil {
		return nil, err
	}
	c.UploadQueueLength = int(n)
	if c.UploadQueueTimeout, err = duration("SLIPWAY_UPLOAD_QUEUE_TIMEOUT", get("SLIPWAY_UPLOAD_QUEUE_TIMEOUT"), 0, time.Hour); err != nil {
		return nil, err
	}
	if c.UploadMemory, err = positiveInt("SLIPWAY_UPLOAD_MEMORY", get("SLIPWAY_UPLOAD_MEMORY")); err != nil {
		return nil, err
	}
	if c.UploadMemory < 8<<20 {
		return nil, fmt.Errorf("SLIPWAY_UPLOAD_MEMORY: must be at least 8388608 (one 8 MiB part), got %d", c.UploadMemory)
	}
	if c.ParseMemory, err = nonNegativeInt("SLIPWAY_PARSE_MEMORY", get("SLIPWAY_PARSE_MEMORY")); err != nil {
		return nil, err
	}
	if c.ParseMemory != 0 && c.ParseMemory < MinParseMemory {
		return nil, fmt.Errorf("SLIPWAY_PARSE_MEMORY: must be 0 or at least %d (64 MiB), got %d", MinParseMemory, c.ParseMemory)
	}
	if c.MemoryLimit, err = memoryLimit(get("GOMEMLIMIT"), cgroupMemoryMax); err != nil {
		return nil, err
	}
	if c.PresignTTL, err = duration("SLIPWAY_PRESIGN_TTL", get("SLIPWAY_PRESIGN_TTL"), time.Second, 7*24*time.Hour); err != nil {
		return nil, err
	}
	if v := get("SLIPWAY_CDN_URL"); v != "" {
		if c.CDNURL, err = baseURL("SLIPWAY_CDN_URL", v); err != nil {
			return nil, err
		}
	}
	if s := getenv("SLIPWAY_SECRET"); s != "" {
		if len(s) < 32 {
			return nil, fmt.Errorf("SLIPWAY_SECRET: must be at least 32 characters")
		}
		c.Secret = []byte(s)
	} else {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		c.Secret, c.SecretGenerated = []byte(hex.EncodeToString(b)), true
	}
	if v := getenv("SLIPWAY_SECRET_PREVIOUS"); strings.TrimSpace(v) != "" {
		if c.SecretGenerated {
			return nil, fmt.Errorf("SLIPWAY_SECRET_PREVIOUS: set SLIPWAY_SECRET too (previous keys only make sense beside a current one)")
		}
		for i, k := range strings.Split(v, ",") {
			k = strings.TrimSpace(k)
			if len(k) < 32 {
				return nil, fmt.Errorf("SLIPWAY_SECRET_PREVIOUS: key %d of the comma-separated list must be at least 32 characters", i+1)
			}
			if k != string(c.Secret) {
				c.SecretPrevious = append(c.SecretPrevious, []byte(k))
			}
		}
	}
	if err := c.LogLevel.UnmarshalText([]byte(get("SLIPWAY_LOG_LEVEL"))); err != nil {
		return nil, fmt.Errorf("SLIPWAY_LOG_LEVEL: must be debug, info, warn or error")
	}
	switch c.LogFormat = strings.ToLower(get("SLIPWAY_LOG_FORMAT")); c.LogFormat {
	case "json", "text":
	default:
		return nil, fmt.Errorf("SLIPWAY_LOG_FORMAT: must be json or text")
	}
	if c.Location, err = time.LoadLocation(get("SLIPWAY_TIMEZONE")); err != nil {
		return nil, fmt.Errorf("SLIPWAY_TIMEZONE: unknown time zone %q", get("SLIPWAY_TIMEZONE"))
	}
	if c.GCInterval, err = duration("SLIPWAY_GC_INTERVAL", get("SLIPWAY_GC_INTERVAL"), 0, 0); err != nil {
		return nil, err
	}
	if c.GCGrace, err = duration("SLIPWAY_GC_GRACE", get("SLIPWAY_GC_GRACE"), 0, 0); err != nil {
		return nil, err
	}
	if c.DrainTimeout, err = duration("SLIPWAY_DRAIN_TIMEOUT", get("SLIPWAY_DRAIN_TIMEOUT"), 0, 0); err != nil {
		return nil, err
	}
	if c.UploadIdleTimeout, err = duration("SLIPWAY_UPLOAD_IDLE_TIMEOUT", get("SLIPWAY_UPLOAD_IDLE_TIMEOUT"), time.Second, 24*time.Hour); err != nil {
		return nil, err
	}
	if n, err := positiveInt("SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN", get("SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN")); err != nil {
		return nil, err
	} else {
		c.UploadSessionsPerToken = int(min(n, 1<<20))
	}
	if c.UploadSessionTTL, err = duration("SLIPWAY_UPLOAD_SESSION_TTL", get("SLIPWAY_UPLOAD_SESSION_TTL"), time.Second, 7*24*time.Hour); err != nil {
		return nil, err
	}
	if c.TesterSessionTTL, err = duration("SLIPWAY_TESTER_SESSION_TTL", get("SLIPWAY_TESTER_SESSION_TTL"), time.Hour, 365*24*time.Hour); err != nil {
		return nil, err
	}
	if v := get("SLIPWAY_READ_CACHE_BYTES"); v != "0" {
		if c.ReadCacheBytes, err = positiveInt("SLIPWAY_READ_CACHE_BYTES", v); err != nil {
			return nil, err
		}
	}
	if c.ReadCacheTTL, err = duration("SLIPWAY_READ_CACHE_TTL", get("SLIPWAY_READ_CACHE_TTL"), 100*time.Millisecond, time.Hour); err != nil {
		return nil, err
	}
	if err := c.loadRetentionAndWebhooks(get); err != nil {
		return nil, err
	}
	if err := c.loadOIDC(get); err != nil {
		return nil, err
	}
	c.UDIDOrganization = get("SLIPWAY_UDID_ORGANIZATION")
	c.UDIDSigningCert, c.UDIDSigningKey = get("SLIPWAY_UDID_SIGNING_CERT"), get("SLIPWAY_UDID_SIGNING_KEY")
	if (c.UDIDSigningCert == "") != (c.UDIDSigningKey == "") {
		return nil, fmt.Errorf("SLIPWAY_UDID_SIGNING_CERT and SLIPWAY_UDID_SIGNING_KEY go together: set both or neither")
	}
	if c.UDIDSigningKey != "" {
		c.warnIfReadable("SLIPWAY_UDID_SIGNING_KEY", c.UDIDSigningKey)
	}
	if path := get("SLIPWAY_SPARKLE_KEY_FILE"); path != "" {
		c.warnIfReadable("SLIPWAY_SPARKLE_KEY_FILE", path)
		text, rerr := os.ReadFile(path)
		if rerr != nil {
			return nil, fmt.Errorf("SLIPWAY_SPARKLE_KEY_FILE: cannot read the file")
		}
		if c.SparkleKey, err = edsign.ParseKey(text); err != nil {
			return nil, fmt.Errorf("SLIPWAY_SPARKLE_KEY_FILE: %v", err)
		}
	}
	if path := get(repokey.EnvVar); path != "" {
		c.warnIfReadable(repokey.EnvVar, path)
		if c.RepoKey, err = repokey.Load(path); err != nil {
			return nil, err
		}
	}
	if err := c.loadMail(get); err != nil {
		return nil, err
	}
	for _, cidr := range strings.Split(get("SLIPWAY_TRUSTED_PROXIES"), ",") {
		if cidr = strings.TrimSpace(cidr); cidr == "" {
			continue
		}
		if _, _, err := net.ParseCIDR(cidr); err != nil {
			return nil, fmt.Errorf("SLIPWAY_TRUSTED_PROXIES: %q is not a CIDR such as 10.0.0.0/8", cidr)
		}
		c.TrustedProxies = append(c.TrustedProxies, cidr)
	}
	return c, nil
}

func baseURL(name, v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s: must be an absolute http:// or https:// URL", name)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("%s: must not carry a query or fragment", name)
	}
	return strings.TrimRight(v, "/"), nil
}

func positiveInt(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%s: must be a positive integer, got %q", name, v)
	}
	return n, nil
}

// duration parses a Go duration; max 0 means unbounded, and 0 is allowed when min is 0.
func duration(name, v string, minD, maxD time.Duration) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil || d < minD || d < 0 || (maxD > 0 && d > maxD) {
		if maxD > 0 {
			return 0, fmt.Errorf("%s: must be a duration between %s and %s, got %q", name, minD, maxD, v)
		}
		return 0, fmt.Errorf("%s: must be a non-negative duration such as 30s or 10m, got %q", name, v)
	}
	return d, nil
}

// MemorySoftLimit is the Go runtime's memory limit serve sets when GOMEMLIMIT is not: a quarter
// over what a replica holds live at most (about 40 MiB for the process, the read cache,
// UploadMemory for part buffers, 3 MiB for each upload being received, and the parse budget;
// docs/deploy.md). Without it the garbage collector lets the heap grow to twice the live data,
// and the long-lived buffer pool would double with it.
func (c *Config) MemorySoftLimit() int64 {
	live := c.liveWithoutParses() + c.ParseBudget()
	if c.MemoryLimit > 0 {
		return min(live+live/4, c.MemoryLimit)
	}
	return live + live/4
}

// liveWithoutParses is what a replica holds live at most beside its parses.
func (c *Config) liveWithoutParses() int64 {
	return 40<<20 + c.ReadCacheBytes + c.UploadMemory + int64(c.MaxConcurrentUploads)*3<<20
}

// Parse budget sizes (ParseBudget).
const (
	// MinParseMemory is the smallest SLIPWAY_PARSE_MEMORY that may be set.
	MinParseMemory = 64 << 20
	// MinDerivedParseMemory is the smallest budget derived from a memory limit: the largest
	// bound of an honest package's parse (a zipped .exe of 64 MiB of resources, with the
	// reader's cache), so that a small pod never refuses a package for its size alone; it
	// waits for its turn instead.
	MinDerivedParseMemory = 176 << 20
	// DefaultParseMemory is the parse budget when no memory limit is known.
	DefaultParseMemory = 192 << 20
)

// ParseBudget is the bytes all parses of packages on a replica may allocate at once
// (appinfo.Budget): SLIPWAY_PARSE_MEMORY when set; else, under a memory limit (MemoryLimit),
// three quarters of what the limit leaves beyond the other budgets (the rest is the garbage
// collector's headroom), at least MinDerivedParseMemory; DefaultParseMemory with no limit. With the
// chart's defaults (a 640 MiB limit, GOMEMLIMIT at 90%: 576 MiB; 280 MiB for the rest) it is
// 222 MiB.
func (c *Config) ParseBudget() int64 {
	switch {
	case c.ParseMemory > 0:
		return c.ParseMemory
	case c.MemoryLimit <= 0:
		return DefaultParseMemory
	}
	return max(MinDerivedParseMemory, (c.MemoryLimit-c.liveWithoutParses())*3/4)
}

// cgroupMemoryMax is where a cgroup v2 container's memory limit is read.
const cgroupMemoryMax = "/sys/fs/cgroup/memory.max"

// memoryLimit is the replica's memory limit: GOMEMLIMIT (gomemlimit, in the runtime's syntax:
// bytes with an optional B, KiB, MiB, GiB or TiB suffix; "off" for none), else the cgroup's
// memory.max (the file at cgroupFile) less a tenth, else 0.
func memoryLimit(gomemlimit, cgroupFile string) (int64, error) {
	if v := strings.TrimSpace(gomemlimit); v != "" {
		if v == "off" {
			return 0, nil
		}
		num, mult := v, int64(1)
		for _, u := range []struct {
			suffix string
			mult   int64
		}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
			if n, ok := strings.CutSuffix(v, u.suffix); ok {
				num, mult = n, u.mult
				break
			}
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil || n < 0 || n > math.MaxInt64/mult {
			return 0, fmt.Errorf("GOMEMLIMIT: must be a byte count such as 600MiB, got %q", gomemlimit)
		}
		return n * mult, nil
	}
	b, err := os.ReadFile(cgroupFile)
	if err != nil {
		return 0, nil // not in a cgroup v2 container
	}
	n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || n <= 0 {
		return 0, nil // "max": no limit
	}
	return n - n/10, nil
}

func (c *Config) loadRetentionAndWebhooks(get func(string) string) error {
	var err error
	if c.RetentionInterval, err = duration("SLIPWAY_RETENTION_INTERVAL", get("SLIPWAY_RETENTION_INTERVAL"), 0, 0); err != nil {
		return err
	}
	for _, v := range []struct {
		name string
		dst  *int
	}{{"SLIPWAY_RETENTION_KEEP_BUILDS", &c.RetentionKeepBuilds}, {"SLIPWAY_RETENTION_MAX_AGE_DAYS", &c.RetentionMaxAgeDays},
		{"SLIPWAY_RETENTION_EXPIRED_PROFILE_DAYS", &c.RetentionExpiredProfileDays}, {"SLIPWAY_WEBHOOK_MAX_ATTEMPTS", &c.WebhookMaxAttempts}} {
		n, err := nonNegativeInt(v.name, get(v.name))
		if err != nil {
			return err
		}
		if n > 1_000_000 {
			return fmt.Errorf("%s: must be at most 1000000, got %d", v.name, n)
		}
		*v.dst = int(n)
	}
	if c.WebhookMaxAttempts < 1 {
		return fmt.Errorf("SLIPWAY_WEBHOOK_MAX_ATTEMPTS: must be at least 1")
	}
	if c.RetentionMaxBytes, err = nonNegativeInt("SLIPWAY_RETENTION_MAX_BYTES", get("SLIPWAY_RETENTION_MAX_BYTES")); err != nil {
		return err
	}
	accessLog := true
	defer func() { c.AccessLogOff = !accessLog }()
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"SLIPWAY_MIGRATE_ON_START", &c.MigrateOnStart}, {"SLIPWAY_CREATE_DATABASE", &c.CreateDatabase}, {"SLIPWAY_ACCESS_LOG", &accessLog}} {
		switch v := strings.ToLower(get(b.name)); v {
		case "true", "1", "yes":
			*b.dst = true
		case "false", "0", "no":
			*b.dst = false
		default:
			return fmt.Errorf("%s: must be true or false, got %q", b.name, v)
		}
	}
	if c.MigrateLockTimeout, err = duration("SLIPWAY_MIGRATE_LOCK_TIMEOUT", get("SLIPWAY_MIGRATE_LOCK_TIMEOUT"), 10*time.Millisecond, time.Hour); err != nil {
		return err
	}
	if c.MigrateTimeout, err = duration("SLIPWAY_MIGRATE_TIMEOUT", get("SLIPWAY_MIGRATE_TIMEOUT"), 0, 24*time.Hour); err != nil {
		return err
	}
	n, err := positiveInt("SLIPWAY_DB_MAX_CONNS", get("SLIPWAY_DB_MAX_CONNS"))
	if err != nil {
		return err
	}
	if n > 10_000 {
		return fmt.Errorf("SLIPWAY_DB_MAX_CONNS: must be at most 10000, got %d", n)
	}
	c.DBMaxConns = int(n)
	switch v := strings.ToLower(get("SLIPWAY_WEBHOOK_ALLOW_PRIVATE")); v {
	case "true", "1", "yes":
		c.WebhookAllowPrivate = true
	case "false", "0", "no":
	default:
		return fmt.Errorf("SLIPWAY_WEBHOOK_ALLOW_PRIVATE: must be true or false, got %q", v)
	}
	if c.WebhookRetryBase, err = duration("SLIPWAY_WEBHOOK_RETRY_BASE", get("SLIPWAY_WEBHOOK_RETRY_BASE"), 10*time.Millisecond, time.Hour); err != nil {
		return err
	}
	if c.WebhookPoll, err = duration("SLIPWAY_WEBHOOK_POLL_INTERVAL", get("SLIPWAY_WEBHOOK_POLL_INTERVAL"), 10*time.Millisecond, time.Hour); err != nil {
		return err
	}
	if c.WebhookTimeout, err = duration("SLIPWAY_WEBHOOK_TIMEOUT", get("SLIPWAY_WEBHOOK_TIMEOUT"), 100*time.Millisecond, 5*time.Minute); err != nil {
		return err
	}
	c.DownloadFlushInterval, err = duration("SLIPWAY_DOWNLOAD_FLUSH_INTERVAL", get("SLIPWAY_DOWNLOAD_FLUSH_INTERVAL"), 10*time.Millisecond, time.Hour)
	return err
}

func nonNegativeInt(name, v string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("%s: must be a whole number, 0 or more, got %q", name, v)
	}
	return n, nil
}

// UDIDSigner reads the UDID profile's signing certificate (then its chain) and key from the PEM
// files configured; all nil when none are. serve calls it at start, so a bad file stops it there.
func (c *Config) UDIDSigner() (cert *x509.Certificate, chain []*x509.Certificate, key crypto.Signer, err error) {
	if c.UDIDSigningCert == "" {
		return nil, nil, nil, nil
	}
	certPEM, err := os.ReadFile(c.UDIDSigningCert)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("SLIPWAY_UDID_SIGNING_CERT: cannot read the file")
	}
	for rest := certPEM; ; {
		var block *pem.Block
		if block, rest = pem.Decode(rest); block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		parsed, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("SLIPWAY_UDID_SIGNING_CERT: a certificate in the file cannot be parsed")
		}
		if cert == nil {
			cert = parsed
		} else {
			chain = append(chain, parsed)
		}
	}
	if cert == nil {
		return nil, nil, nil, fmt.Errorf("SLIPWAY_UDID_SIGNING_CERT: no PEM certificate in the file")
	}
	keyPEM, err := os.ReadFile(c.UDIDSigningKey)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("SLIPWAY_UDID_SIGNING_KEY: cannot read the file")
	}
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return nil, nil, nil, fmt.Errorf("SLIPWAY_UDID_SIGNING_KEY: no PEM key in the file")
	}
	var parsed any
	if parsed, err = x509.ParsePKCS8PrivateKey(block.Bytes); err != nil {
		if parsed, err = x509.ParsePKCS1PrivateKey(block.Bytes); err != nil {
			parsed, err = x509.ParseECPrivateKey(block.Bytes)
		}
	}
	signer, ok := parsed.(crypto.Signer)
	if err != nil || !ok {
		return nil, nil, nil, fmt.Errorf("SLIPWAY_UDID_SIGNING_KEY: the key cannot be parsed (PKCS #8, PKCS #1 or EC, unencrypted)")
	}
	return cert, chain, signer, nil
}

// warnIfReadable adds a warning when the private key file at path may be read by users other
// than its owner (a key that others on the host can read can be used by them). It refuses
// nothing: a Kubernetes Secret mounted without defaultMode is 0644 and still private to the pod.
func (c *Config) warnIfReadable(setting, path string) {
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm()&0o077 == 0 {
		return
	}
	c.Warnings = append(c.Warnings, fmt.Sprintf("%s: the key file may be read by other users (mode %04o); make it readable by its owner only (chmod 600, or defaultMode: 0400 on a mounted Secret)",
		setting, st.Mode().Perm()))
}

// loadOIDC reads the console's identity provider settings.
func (c *Config) loadOIDC(get func(string) string) error {
	list := func(name string) []string {
		var out []string
		for _, v := range strings.Split(get(name), ",") {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
		return out
	}
	c.OIDC = OIDCConfig{Issuer: get("SLIPWAY_OIDC_ISSUER"), ClientID: get("SLIPWAY_OIDC_CLIENT_ID"), ClientSecret: get("SLIPWAY_OIDC_CLIENT_SECRET"),
		GroupsClaim: get("SLIPWAY_OIDC_GROUPS_CLAIM"), AllowedDomains: list("SLIPWAY_OIDC_ALLOWED_DOMAINS"),
		AllowedGroups: list("SLIPWAY_OIDC_ALLOWED_GROUPS"), AdminGroups: list("SLIPWAY_OIDC_ADMIN_GROUPS")}
	for _, b := range []struct {
		name string
		dst  *bool
	}{{"SLIPWAY_OIDC_ALLOW_ANY", &c.OIDC.AllowAny}, {"SLIPWAY_OIDC_TRUST_EMAILS", &c.OIDC.TrustEmails}} {
		switch v := strings.ToLower(get(b.name)); v {
		case "true", "1", "yes":
			*b.dst = true
		case "false", "0", "no":
		default:
			return fmt.Errorf("%s: must be true or false, got %q", b.name, v)
		}
	}
	if c.OIDC.Issuer == "" {
		return nil
	}
	if u, err := url.Parse(c.OIDC.Issuer); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("SLIPWAY_OIDC_ISSUER: must be the provider's http(s) issuer URL")
	}
	if c.OIDC.ClientID == "" {
		return fmt.Errorf("SLIPWAY_OIDC_CLIENT_ID: required with SLIPWAY_OIDC_ISSUER")
	}
	if len(c.OIDC.AllowedDomains) == 0 && len(c.OIDC.AllowedGroups) == 0 && !c.OIDC.AllowAny {
		c.Warnings = append(c.Warnings, "SLIPWAY_OIDC_ISSUER is set but nobody may sign in with it: set SLIPWAY_OIDC_ALLOWED_DOMAINS, "+
			"SLIPWAY_OIDC_ALLOWED_GROUPS or (every account of the issuer) SLIPWAY_OIDC_ALLOW_ANY=true; until then the console "+
			"opens only with `slipway admin login-link`")
	}
	if c.OIDC.TrustEmails && len(c.OIDC.AllowedDomains) == 0 {
		c.Warnings = append(c.Warnings, "SLIPWAY_OIDC_TRUST_EMAILS has no effect without SLIPWAY_OIDC_ALLOWED_DOMAINS")
	}
	return nil
}

// loadMail reads the SMTP relay and the mail sender's settings. Mail is optional: without
// SLIPWAY_SMTP_URL the rest is not required (and a setting given anyway is a warning).
func (c *Config) loadMail(get func(string) string) error {
	m := &c.Mail
	var err error
	if m.Timeout, err = duration("SLIPWAY_SMTP_TIMEOUT", get("SLIPWAY_SMTP_TIMEOUT"), time.Second, 10*time.Minute); err != nil {
		return err
	}
	if m.RetryBase, err = duration("SLIPWAY_MAIL_RETRY_BASE", get("SLIPWAY_MAIL_RETRY_BASE"), 10*time.Millisecond, time.Hour); err != nil {
		return err
	}
	if m.Poll, err = duration("SLIPWAY_MAIL_POLL_INTERVAL", get("SLIPWAY_MAIL_POLL_INTERVAL"), 10*time.Millisecond, time.Hour); err != nil {
		return err
	}
	n, err := positiveInt("SLIPWAY_MAIL_MAX_ATTEMPTS", get("SLIPWAY_MAIL_MAX_ATTEMPTS"))
	if err != nil {
		return err
	}
	if n > 1000 {
		return fmt.Errorf("SLIPWAY_MAIL_MAX_ATTEMPTS: must be at most 1000, got %d", n)
	}
	m.MaxAttempts = int(n)
	r, err := strconv.ParseFloat(get("SLIPWAY_MAIL_RATE"), 64)
	if err != nil || !(r > 0) || r > 10000 {
		return fmt.Errorf("SLIPWAY_MAIL_RATE: must be a number of messages per second above 0 and at most 10000, got %q", get("SLIPWAY_MAIL_RATE"))
	}
	m.Rate = r

	raw := get("SLIPWAY_SMTP_URL")
	if raw == "" {
		for _, v := range []string{"SLIPWAY_MAIL_FROM", "SLIPWAY_SMTP_PASSWORD_FILE", "SLIPWAY_SMTP_CA_FILE"} {
			if get(v) != "" {
				c.Warnings = append(c.Warnings, v+" is set but SLIPWAY_SMTP_URL is not: mail is off")
			}
		}
		return nil
	}
	if m.Relay, err = mail.ParseURL(raw); err != nil {
		return fmt.Errorf("SLIPWAY_SMTP_URL: %v", err)
	}
	from := get("SLIPWAY_MAIL_FROM")
	if from == "" {
		return fmt.Errorf("SLIPWAY_MAIL_FROM: required with SLIPWAY_SMTP_URL (the sender of every mail, e.g. \"Slipway <builds@example.com>\")")
	}
	if m.From, err = mail.ParseFrom(from); err != nil {
		return fmt.Errorf("SLIPWAY_MAIL_FROM: %v", err)
	}
	switch path := get("SLIPWAY_SMTP_PASSWORD_FILE"); {
	case path != "" && m.Relay.User == "":
		return fmt.Errorf("SLIPWAY_SMTP_PASSWORD_FILE: SLIPWAY_SMTP_URL names no user to sign in as (write smtps://user@host)")
	case path == "" && m.Relay.User != "":
		return fmt.Errorf("SLIPWAY_SMTP_PASSWORD_FILE: required, since SLIPWAY_SMTP_URL names a user (%s)", m.Relay)
	case path != "":
		c.warnIfReadable("SLIPWAY_SMTP_PASSWORD_FILE", path)
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return fmt.Errorf("SLIPWAY_SMTP_PASSWORD_FILE: cannot read the file")
		}
		p := strings.TrimRight(string(b), "\r\n")
		if p == "" || strings.ContainsAny(p, "\r\n\x00") {
			return fmt.Errorf("SLIPWAY_SMTP_PASSWORD_FILE: the file must hold the password on one line")
		}
		m.Password = mail.Password(p)
	}
	if path := get("SLIPWAY_SMTP_CA_FILE"); path != "" {
		b, rerr := os.ReadFile(path)
		if rerr != nil {
			return fmt.Errorf("SLIPWAY_SMTP_CA_FILE: cannot read the file")
		}
		m.RootCAs = x509.NewCertPool()
		if !m.RootCAs.AppendCertsFromPEM(b) {
			return fmt.Errorf("SLIPWAY_SMTP_CA_FILE: holds no PEM certificate")
		}
		if m.Relay.Security == mail.Plain {
			c.Warnings = append(c.Warnings, "SLIPWAY_SMTP_CA_FILE has no effect with smtp+insecure:// (no TLS)")
		}
	}
	m.On = true
	return nil
}
