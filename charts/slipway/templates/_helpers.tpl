{{/*
Names and labels.
*/}}
{{- define "slipway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "slipway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "slipway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "slipway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "slipway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/*
The server's pods (not the migration job's, which carry component: migrate): the Deployment's
selector, the Service's, the PDB's and the ServiceMonitor's.
*/}}
{{- define "slipway.serverSelectorLabels" -}}
{{ include "slipway.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "slipway.labels" -}}
helm.sh/chart: {{ include "slipway.chart" . }}
{{ include "slipway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: slipway
{{- end }}

{{- define "slipway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "slipway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "slipway.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}
{{- end }}

{{/*
The Secret the pods read SLIPWAY_DATABASE_URL, SLIPWAY_SECRET and the S3 keys from.
*/}}
{{- define "slipway.secretName" -}}
{{- default (include "slipway.fullname" .) .Values.existingSecret }}
{{- end }}

{{/*
SLIPWAY_PUBLIC_URL: config.publicURL, else the first ingress host (https when a TLS entry lists
it), else the Service's in-cluster URL.
*/}}
{{- define "slipway.publicURL" -}}
{{- if .Values.config.publicURL }}
{{- trimSuffix "/" .Values.config.publicURL }}
{{- else if and .Values.ingress.enabled .Values.ingress.hosts }}
{{- $host := (first .Values.ingress.hosts).host }}
{{- $scheme := "http" }}
{{- range .Values.ingress.tls }}
{{- if has $host (.hosts | default list) }}
{{- $scheme = "https" }}
{{- end }}
{{- end }}
{{- printf "%s://%s" $scheme $host }}
{{- else if and .Values.httpRoute.enabled .Values.httpRoute.hostnames }}
{{- /* TLS ends at the Gateway's listener, which the chart cannot see: assume https. */}}
{{- printf "https://%s" (first .Values.httpRoute.hostnames) }}
{{- else }}
{{- $port := "" }}
{{- if ne (int .Values.service.port) 80 }}
{{- $port = printf ":%d" (int .Values.service.port) }}
{{- end }}
{{- printf "http://%s.%s.svc.cluster.local%s" (include "slipway.fullname" .) .Release.Namespace $port }}
{{- end }}
{{- end }}

{{/*
True ("true") when storage.url is a file:// store.
*/}}
{{- define "slipway.fileStorage" -}}
{{- if hasPrefix "file://" .Values.storage.url }}true{{ end }}
{{- end }}

{{/*
The folder of a file:///ABSOLUTE/PATH storage URL.
*/}}
{{- define "slipway.filePath" -}}
{{- trimPrefix "file://" .Values.storage.url }}
{{- end }}

{{/*
Refuses configurations that cannot work. Included by the Deployment, which is always rendered.
*/}}
{{- define "slipway.validate" -}}
{{- $url := .Values.storage.url }}
{{- if include "slipway.fileStorage" . }}
{{- if or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled }}
{{- fail "storage.url is file://, a folder local to one pod: with replicaCount > 1 or autoscaling.enabled each pod would see different files. Use s3:// storage (any S3-compatible service), or replicaCount: 1 with autoscaling.enabled: false and storage.persistence.enabled: true." }}
{{- end }}
{{- if not (hasPrefix "file:///" $url) }}
{{- fail "storage.url: a file:// store in the chart needs an absolute path (file:///var/lib/slipway/objects); it is mounted from storage.persistence." }}
{{- end }}
{{- if or (contains "?" $url) (contains "#" $url) (eq (include "slipway.filePath" .) "/") }}
{{- fail "storage.url: write file:///ABSOLUTE/FOLDER, with no query or fragment and not the root folder." }}
{{- end }}
{{- if not .Values.storage.persistence.enabled }}
{{- fail "storage.url is file://: set storage.persistence.enabled: true (a PersistentVolumeClaim), otherwise every upload is lost when the pod restarts." }}
{{- end }}
{{- else if not (hasPrefix "s3://" $url) }}
{{- fail "storage.url must be s3://BUCKET[/PREFIX]?region=... (or file:///PATH for a single replica with persistence)." }}
{{- end }}
{{- if and .Values.httpRoute.enabled (not .Values.httpRoute.parentRefs) }}
{{- fail "httpRoute.enabled: set httpRoute.parentRefs to the Gateway (and listener) the route attaches to, e.g. [{name: public, namespace: gateways}]." }}
{{- end }}
{{- if .Values.podDisruptionBudget.enabled }}
{{- $max := toString .Values.podDisruptionBudget.maxUnavailable }}
{{- $min := toString .Values.podDisruptionBudget.minAvailable }}
{{- if eq (empty $max) (empty $min) }}
{{- fail "podDisruptionBudget: set exactly one of maxUnavailable and minAvailable." }}
{{- end }}
{{- end }}
{{- end }}

{{/*
SLIPWAY_SECRET's value when the chart manages the Secret: secret.value, else the value already in
the release's Secret (so upgrades keep it), else a new random one. It is generated once per render
and remembered, so the Secret and the migration hook's Secret carry the same value.
*/}}
{{- define "slipway.secretValue" -}}
{{- if .Values.secret.value }}
{{- .Values.secret.value }}
{{- else }}
{{- if not (hasKey .Values.secret "_resolved") }}
{{- $value := "" }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "slipway.fullname" .) }}
{{- if and $existing $existing.data }}
{{- $value = (get $existing.data "SLIPWAY_SECRET" | default "" | b64dec) }}
{{- end }}
{{- if lt (len $value) 32 }}
{{- $value = randAlphaNum 64 }}
{{- end }}
{{- $_ := set .Values.secret "_resolved" $value }}
{{- end }}
{{- get .Values.secret "_resolved" }}
{{- end }}
{{- end }}

{{/*
The Secret's data (chart-managed Secret and the migration hook's copy), base64-encoded.
*/}}
{{- define "slipway.secretData" -}}
SLIPWAY_DATABASE_URL: {{ .Values.database.url | b64enc | quote }}
SLIPWAY_SECRET: {{ include "slipway.secretValue" . | b64enc | quote }}
{{- if .Values.secret.previous }}
SLIPWAY_SECRET_PREVIOUS: {{ .Values.secret.previous | b64enc | quote }}
{{- end }}
{{- if .Values.config.oidc.clientSecret }}
SLIPWAY_OIDC_CLIENT_SECRET: {{ .Values.config.oidc.clientSecret | b64enc | quote }}
{{- end }}
{{- if .Values.s3Credentials.accessKeyID }}
AWS_ACCESS_KEY_ID: {{ .Values.s3Credentials.accessKeyID | b64enc | quote }}
AWS_SECRET_ACCESS_KEY: {{ .Values.s3Credentials.secretAccessKey | b64enc | quote }}
{{- end }}
{{- end }}

{{/*
Non-secret settings: the ConfigMap's data, and the migration job's env. Only config.Vars names
(pkg/config) plus AWS_REGION; test/deploy checks every SLIPWAY_* name here exists there.
*/}}
{{- define "slipway.configData" -}}
SLIPWAY_ADDR: {{ printf ":%d" (int .Values.containerPort) | quote }}
SLIPWAY_PUBLIC_URL: {{ include "slipway.publicURL" . | quote }}
SLIPWAY_STORAGE_URL: {{ .Values.storage.url | quote }}
SLIPWAY_MAX_UPLOAD_BYTES: {{ int64 .Values.config.maxUploadBytes | toString | quote }}
SLIPWAY_MAX_CONCURRENT_UPLOADS: {{ int64 .Values.config.maxConcurrentUploads | toString | quote }}
SLIPWAY_UPLOADS_PER_TOKEN: {{ int64 .Values.config.uploadsPerToken | toString | quote }}
SLIPWAY_UPLOAD_MIN_RATE: {{ int64 .Values.config.uploadMinRate | toString | quote }}
SLIPWAY_UPLOAD_QUEUE_LENGTH: {{ int64 .Values.config.uploadQueueLength | toString | quote }}
SLIPWAY_UPLOAD_QUEUE_TIMEOUT: {{ .Values.config.uploadQueueTimeout | quote }}
SLIPWAY_UPLOAD_MEMORY: {{ int64 .Values.config.uploadMemory | toString | quote }}
SLIPWAY_UPLOAD_SESSION_TTL: {{ .Values.config.uploadSessionTTL | quote }}
SLIPWAY_TESTER_SESSION_TTL: {{ .Values.config.testerSessionTTL | quote }}
SLIPWAY_UPLOAD_SESSIONS_PER_TOKEN: {{ int64 .Values.config.uploadSessionsPerToken | toString | quote }}
SLIPWAY_READ_CACHE_BYTES: {{ int64 .Values.config.readCacheBytes | toString | quote }}
SLIPWAY_READ_CACHE_TTL: {{ .Values.config.readCacheTTL | quote }}
SLIPWAY_RETENTION_INTERVAL: {{ .Values.config.retention.interval | quote }}
SLIPWAY_RETENTION_KEEP_BUILDS: {{ int64 .Values.config.retention.keepBuilds | toString | quote }}
SLIPWAY_RETENTION_MAX_AGE_DAYS: {{ int64 .Values.config.retention.maxAgeDays | toString | quote }}
SLIPWAY_RETENTION_MAX_BYTES: {{ int64 .Values.config.retention.maxBytes | toString | quote }}
SLIPWAY_RETENTION_EXPIRED_PROFILE_DAYS: {{ int64 .Values.config.retention.expiredProfileDays | toString | quote }}
SLIPWAY_WEBHOOK_ALLOW_PRIVATE: {{ .Values.config.webhooks.allowPrivate | toString | quote }}
SLIPWAY_WEBHOOK_RETRY_BASE: {{ .Values.config.webhooks.retryBase | quote }}
SLIPWAY_WEBHOOK_MAX_ATTEMPTS: {{ int64 .Values.config.webhooks.maxAttempts | toString | quote }}
SLIPWAY_WEBHOOK_POLL_INTERVAL: {{ .Values.config.webhooks.pollInterval | quote }}
SLIPWAY_WEBHOOK_TIMEOUT: {{ .Values.config.webhooks.timeout | quote }}
SLIPWAY_DOWNLOAD_FLUSH_INTERVAL: {{ .Values.config.downloadFlushInterval | quote }}
SLIPWAY_UDID_ORGANIZATION: {{ .Values.config.udid.organization | quote }}
SLIPWAY_OIDC_ISSUER: {{ .Values.config.oidc.issuer | quote }}
SLIPWAY_OIDC_CLIENT_ID: {{ .Values.config.oidc.clientID | quote }}
SLIPWAY_OIDC_ALLOWED_DOMAINS: {{ .Values.config.oidc.allowedDomains | quote }}
SLIPWAY_OIDC_ALLOWED_GROUPS: {{ .Values.config.oidc.allowedGroups | quote }}
SLIPWAY_OIDC_ALLOW_ANY: {{ .Values.config.oidc.allowAny | quote }}
SLIPWAY_OIDC_TRUST_EMAILS: {{ .Values.config.oidc.trustEmails | quote }}
SLIPWAY_OIDC_ADMIN_GROUPS: {{ .Values.config.oidc.adminGroups | quote }}
SLIPWAY_OIDC_GROUPS_CLAIM: {{ .Values.config.oidc.groupsClaim | quote }}
{{- if .Values.config.sparkle.keySecret }}
SLIPWAY_SPARKLE_KEY_FILE: "/etc/slipway/sparkle/sparkle.key"
{{- end }}
{{- if .Values.config.repositories.keySecret }}
SLIPWAY_REPO_KEY_FILE: "/etc/slipway/repo/repo.key"
{{- end }}
SLIPWAY_SMTP_URL: {{ .Values.config.mail.smtpURL | quote }}
SLIPWAY_MAIL_FROM: {{ .Values.config.mail.from | quote }}
SLIPWAY_SMTP_TIMEOUT: {{ .Values.config.mail.timeout | quote }}
SLIPWAY_MAIL_RATE: {{ .Values.config.mail.rate | toString | quote }}
SLIPWAY_MAIL_RETRY_BASE: {{ .Values.config.mail.retryBase | quote }}
SLIPWAY_MAIL_MAX_ATTEMPTS: {{ int64 .Values.config.mail.maxAttempts | toString | quote }}
SLIPWAY_MAIL_POLL_INTERVAL: {{ .Values.config.mail.pollInterval | quote }}
{{- if .Values.config.mail.passwordSecret }}
SLIPWAY_SMTP_PASSWORD_FILE: "/etc/slipway/smtp/password"
{{- end }}
{{- if .Values.config.mail.caSecret }}
SLIPWAY_SMTP_CA_FILE: "/etc/slipway/smtp-ca/ca.crt"
{{- end }}
{{- if .Values.config.udid.signingSecret }}
SLIPWAY_UDID_SIGNING_CERT: "/etc/slipway/udid/tls.crt"
SLIPWAY_UDID_SIGNING_KEY: "/etc/slipway/udid/tls.key"
{{- end }}
SLIPWAY_PRESIGN_TTL: {{ .Values.config.presignTTL | quote }}
{{- with .Values.config.cdnURL }}
SLIPWAY_CDN_URL: {{ . | quote }}
{{- end }}
SLIPWAY_LOG_LEVEL: {{ .Values.config.logLevel | quote }}
SLIPWAY_LOG_FORMAT: {{ .Values.config.logFormat | quote }}
SLIPWAY_TIMEZONE: {{ .Values.config.timezone | quote }}
SLIPWAY_GC_INTERVAL: {{ .Values.config.gcInterval | quote }}
SLIPWAY_GC_GRACE: {{ .Values.config.gcGrace | quote }}
SLIPWAY_DRAIN_TIMEOUT: {{ printf "%ds" (int .Values.config.drainTimeoutSeconds) | quote }}
{{- if .Values.internalPort }}
SLIPWAY_INTERNAL_ADDR: {{ printf ":%d" (int .Values.internalPort) | quote }}
{{- end }}
SLIPWAY_MIGRATE_ON_START: {{ not .Values.migrations.enabled | toString | quote }}
SLIPWAY_MIGRATE_LOCK_TIMEOUT: {{ printf "%ds" (int .Values.migrations.lockTimeoutSeconds) | quote }}
SLIPWAY_MIGRATE_TIMEOUT: {{ printf "%ds" (int .Values.migrations.lockRetrySeconds) | quote }}
SLIPWAY_DB_MAX_CONNS: {{ int .Values.config.dbMaxConns | toString | quote }}
SLIPWAY_CREATE_DATABASE: {{ .Values.database.create | toString | quote }}
SLIPWAY_ACCESS_LOG: {{ .Values.config.accessLog | toString | quote }}
{{- with .Values.config.uploadIdleTimeout }}
SLIPWAY_UPLOAD_IDLE_TIMEOUT: {{ . | quote }}
{{- end }}
SLIPWAY_TRUSTED_PROXIES: {{ .Values.config.trustedProxies | quote }}
{{- with .Values.storage.region }}
AWS_REGION: {{ . | quote }}
{{- end }}
{{- end }}

{{/*
Env entries read from a Secret, plus GOMEMLIMIT and extraEnv. Call with
(dict "root" $ "secretName" NAME "container" CONTAINER "resources" RESOURCES).
*/}}
{{- define "slipway.env" -}}
{{- $root := .root -}}
{{- /* The chart's own Secrets use the variable names as keys; existingSecret's are configurable. */}}
{{- $keys := dict "databaseURL" "SLIPWAY_DATABASE_URL" "secret" "SLIPWAY_SECRET" "secretPrevious" "SLIPWAY_SECRET_PREVIOUS" "oidcClientSecret" "SLIPWAY_OIDC_CLIENT_SECRET" "awsAccessKeyID" "AWS_ACCESS_KEY_ID" "awsSecretAccessKey" "AWS_SECRET_ACCESS_KEY" }}
{{- if $root.Values.existingSecret }}
{{- $keys = merge (deepCopy $root.Values.existingSecretKeys) $keys }}
{{- end -}}
- name: SLIPWAY_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $keys.databaseURL | quote }}
- name: SLIPWAY_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $keys.secret | quote }}
{{- if or $root.Values.existingSecret $root.Values.secret.previous }}
- name: SLIPWAY_SECRET_PREVIOUS
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $keys.secretPrevious | quote }}
      optional: {{ not (empty $root.Values.existingSecret) }}
{{- end }}
{{- if or $root.Values.existingSecret $root.Values.config.oidc.clientSecret }}
- name: SLIPWAY_OIDC_CLIENT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $keys.oidcClientSecret | quote }}
      optional: {{ not (empty $root.Values.existingSecret) }}
{{- end }}
{{- if or $root.Values.existingSecret $root.Values.s3Credentials.accessKeyID }}
- name: AWS_ACCESS_KEY_ID
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $keys.awsAccessKeyID | quote }}
      optional: {{ not (empty $root.Values.existingSecret) }}
- name: AWS_SECRET_ACCESS_KEY
  valueFrom:
    secretKeyRef:
      name: {{ .secretName }}
      key: {{ $keys.awsSecretAccessKey | quote }}
      optional: {{ not (empty $root.Values.existingSecret) }}
{{- end }}
{{- if and .resources .resources.limits .resources.limits.memory }}
# The Go runtime collects garbage harder as its memory nears GOMEMLIMIT: goMemLimitPercent of the
# container's limit, leaving the rest to what the runtime does not count (values.yaml).
- name: GOMEMLIMIT
  value: {{ div (mul (include "slipway.bytes" .resources.limits.memory | int64) (int64 $root.Values.goMemLimitPercent)) 100 | toString | quote }}
{{- end }}
{{- with $root.Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/*
The pod- and container-level hardening every Slipway pod gets.
*/}}
{{- define "slipway.podSecurityContext" -}}
runAsNonRoot: true
{{- with .Values.podSecurityContext.runAsUser }}
runAsUser: {{ int64 . }}
{{- end }}
{{- with .Values.podSecurityContext.runAsGroup }}
runAsGroup: {{ int64 . }}
{{- end }}
{{- with .Values.podSecurityContext.fsGroup }}
fsGroup: {{ int64 . }}
{{- end }}
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{- define "slipway.containerSecurityContext" -}}
runAsNonRoot: true
readOnlyRootFilesystem: true
allowPrivilegeEscalation: false
privileged: false
capabilities:
  drop:
    - ALL
seccompProfile:
  type: RuntimeDefault
{{- end }}

{{/*
terminationGracePeriodSeconds: the preStop sleep, the drain timeout, then what `slipway serve` does
after it (cmd/slipway/serve.go): up to 5 s for the cancelled requests' connections to close, up to
30 s (handlerCleanupTimeout) for their handlers to abort their uploads, and 5 s for the background
loops to stop and the process to exit. test/deploy checks the sum.
*/}}
{{- define "slipway.shutdownAfterDrainSeconds" -}}
{{- add 5 30 5 }}
{{- end }}

{{- define "slipway.terminationGracePeriodSeconds" -}}
{{- add (int .Values.lifecycle.preStopSleepSeconds) (int .Values.config.drainTimeoutSeconds) (include "slipway.shutdownAfterDrainSeconds" . | int) }}
{{- end }}

{{/*
The name of the container and Service port Prometheus scrapes /metrics on (the ServiceMonitor's
and the NetworkPolicy's monitoring rule): the internal port, `metrics`, unless internalPort is 0.
*/}}
{{- define "slipway.metricsPortName" -}}
{{- if .Values.internalPort }}metrics{{ else }}http{{ end }}
{{- end }}

{{/*
The Slipway pods' affinity: `affinity` when set, else spread.antiAffinity.
*/}}
{{- define "slipway.affinity" -}}
{{- if .Values.affinity }}
{{- toYaml .Values.affinity }}
{{- else if eq .Values.spread.antiAffinity.type "soft" }}
podAntiAffinity:
  preferredDuringSchedulingIgnoredDuringExecution:
    - weight: {{ int .Values.spread.antiAffinity.weight }}
      podAffinityTerm:
        topologyKey: {{ .Values.spread.antiAffinity.topologyKey }}
        labelSelector:
          matchLabels:
            {{- include "slipway.serverSelectorLabels" . | nindent 12 }}
{{- else if eq .Values.spread.antiAffinity.type "hard" }}
podAntiAffinity:
  requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: {{ .Values.spread.antiAffinity.topologyKey }}
      labelSelector:
        matchLabels:
          {{- include "slipway.serverSelectorLabels" . | nindent 10 }}
{{- end }}
{{- end }}

{{/*
The Slipway pods' topologySpreadConstraints: `topologySpreadConstraints` when set, else one per
spread.topologySpread key. matchLabelKeys pod-template-hash counts only the pods of the same
ReplicaSet, so a rollout's old pods do not skew the new ones.
*/}}
{{- define "slipway.topologySpreadConstraints" -}}
{{- if .Values.topologySpreadConstraints }}
{{- toYaml .Values.topologySpreadConstraints }}
{{- else if .Values.spread.topologySpread.enabled }}
{{- range .Values.spread.topologySpread.topologyKeys }}
- topologyKey: {{ . }}
  maxSkew: {{ int $.Values.spread.topologySpread.maxSkew }}
  whenUnsatisfiable: {{ $.Values.spread.topologySpread.whenUnsatisfiable }}
  labelSelector:
    matchLabels:
      {{- include "slipway.serverSelectorLabels" $ | nindent 6 }}
  matchLabelKeys:
    - pod-template-hash
{{- end }}
{{- end }}
{{- end }}

{{/*
The bytes of a Kubernetes memory quantity (640Mi, 1.5Gi, 512M, 1000000): binary and decimal
suffixes, a plain number, or a fraction of one.
*/}}
{{- define "slipway.bytes" -}}
{{- $q := toString . -}}
{{- $units := dict "" 1 "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 -}}
{{- $num := regexFind "^[0-9]+(\\.[0-9]+)?" $q -}}
{{- $suffix := trimPrefix $num $q -}}
{{- if or (not $num) (not (hasKey $units $suffix)) -}}
{{- fail (printf "memory quantity %q: want a number with Ki, Mi, Gi, Ti, k, M, G or T (or none)" $q) -}}
{{- end -}}
{{- mulf $num (get $units $suffix) | floor | int64 -}}
{{- end }}

{{/*
The mail Secrets' mounts and volumes (the relay's password and CA files), for the server and the
migration job alike: both read the configuration, which reads the files at start.
*/}}
{{- define "slipway.mailVolumeMounts" -}}
{{- if .Values.config.mail.passwordSecret }}
- name: smtp-password
  mountPath: /etc/slipway/smtp
  readOnly: true
{{- end }}
{{- if .Values.config.mail.caSecret }}
- name: smtp-ca
  mountPath: /etc/slipway/smtp-ca
  readOnly: true
{{- end }}
{{- end }}

{{- define "slipway.mailVolumes" -}}
{{- with .Values.config.mail.passwordSecret }}
- name: smtp-password
  secret:
    secretName: {{ . }}
    items:
      - key: password
        path: password
{{- end }}
{{- with .Values.config.mail.caSecret }}
- name: smtp-ca
  secret:
    secretName: {{ . }}
    items:
      - key: ca.crt
        path: ca.crt
{{- end }}
{{- end }}
