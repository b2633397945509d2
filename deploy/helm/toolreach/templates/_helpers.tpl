{{/* Names and labels, as `helm create` makes them. */}}
{{- define "toolreach.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "toolreach.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "toolreach.selectorLabels" -}}
app.kubernetes.io/name: {{ include "toolreach.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The app's pods, and only them: the migration job's pod is another component. */}}
{{- define "toolreach.serverSelectorLabels" -}}
{{ include "toolreach.selectorLabels" . }}
app.kubernetes.io/component: server
{{- end }}

{{- define "toolreach.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "toolreach.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "toolreach.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "toolreach.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "toolreach.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "toolreach.databaseSecret" -}}
{{- default (printf "%s-database" (include "toolreach.fullname" .)) .Values.database.existingSecret }}
{{- end }}

{{- define "toolreach.keysSecret" -}}
{{- default (printf "%s-keys" (include "toolreach.fullname" .)) .Values.keys.existingSecret }}
{{- end }}

{{/*
Connections one replica may hold: TOOLREACH_DATABASE_POOL_SIZE (5) + TOOLREACH_DATABASE_MAX_OVERFLOW
(10), as set in `config` or by default (app/settings.py), + 1 for the database probe
(app/db_health.py) + 1 for the listener (app/tools/listener.py). docs/DEPLOY.md, "Connection
budget", does the sum.
*/}}
{{- define "toolreach.connectionsPerReplica" -}}
{{- $config := .Values.config | default dict }}
{{- $size := ternary (get $config "TOOLREACH_DATABASE_POOL_SIZE") 5 (hasKey $config "TOOLREACH_DATABASE_POOL_SIZE") | int }}
{{- $overflow := ternary (get $config "TOOLREACH_DATABASE_MAX_OVERFLOW") 10 (hasKey $config "TOOLREACH_DATABASE_MAX_OVERFLOW") | int }}
{{- add $size $overflow 2 }}
{{- end }}

{{/* The ServiceMonitor: "auto" renders it when the cluster serves the Prometheus Operator's API. */}}
{{- define "toolreach.serviceMonitorEnabled" -}}
{{- $wanted := toString .Values.serviceMonitor.enabled }}
{{- if not (has $wanted (list "auto" "true" "false")) }}
{{- fail (printf "serviceMonitor.enabled must be auto, true or false, not %q" $wanted) }}
{{- end }}
{{- if or (eq $wanted "true") (and (eq $wanted "auto") (.Capabilities.APIVersions.Has "monitoring.coreos.com/v1")) }}true{{- end }}
{{- end }}

{{/* The security context, the /tmp volume and its mount, shared by the app and the migration job. */}}
{{- define "toolreach.containerSecurity" -}}
securityContext:
  {{- toYaml .Values.securityContext | nindent 2 }}
volumeMounts:
  - name: tmp
    mountPath: /tmp
{{- end }}

{{- define "toolreach.podSecurity" -}}
automountServiceAccountToken: false
enableServiceLinks: false
securityContext:
  {{- toYaml .Values.podSecurityContext | nindent 2 }}
{{- with .Values.imagePullSecrets }}
imagePullSecrets:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumes:
  - name: tmp
    emptyDir:
      sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end }}

{{/* Settings that must come from a Secret, never from `config`. */}}
{{- define "toolreach.checkConfig" -}}
{{- range $name, $value := .Values.config }}
{{- $upper := upper $name }}
{{- if or (hasSuffix "_KEYS" $upper) (hasSuffix "DATABASE_URL" $upper) (contains "PASSWORD" $upper) (contains "SECRET" $upper) (contains "TOKEN" $upper) }}
{{- fail (printf "config.%s looks secret: put it in a Secret (database.existingSecret, keys.existingSecret or extraEnv with valueFrom), not in values" $name) }}
{{- end }}
{{- end }}
{{- end }}
