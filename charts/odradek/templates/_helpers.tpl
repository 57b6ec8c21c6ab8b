{{/*
Names and labels shared by every template. Cluster-scoped objects (ClusterRole, binding) are
named after the release *and* its namespace, so the same release name in two namespaces does
not collide.
*/}}

{{- define "odradek.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "odradek.fullname" -}}
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

{{- define "odradek.operatorName" -}}
{{- printf "%s-operator" (include "odradek.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
A name of at most 63 characters that stays unique: a longer one keeps its first 52 and ends
in a hash of the whole. Plain truncation made "<name>-uninstall" in a long namespace the very
name of the operator's ClusterRole, and the uninstall hook then replaced the operator's rights.
*/}}
{{- define "odradek.boundedName" -}}
{{- if le (len .) 63 }}{{ . }}{{ else }}{{ printf "%s-%s" (trunc 52 . | trimSuffix "-") (sha256sum . | trunc 10) }}{{ end }}
{{- end }}

{{- define "odradek.clusterScopedName" -}}
{{- include "odradek.boundedName" (printf "%s-%s" (include "odradek.operatorName" .) .Release.Namespace) }}
{{- end }}

{{- define "odradek.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "odradek.labels" -}}
helm.sh/chart: {{ include "odradek.chart" . }}
app.kubernetes.io/name: {{ include "odradek.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: odradek
{{- end }}

{{- define "odradek.operatorSelectorLabels" -}}
app.kubernetes.io/name: {{ include "odradek.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end }}

{{/* The release's odradek resources: what the pre-delete hook deletes. */}}
{{- define "odradek.resourceSelector" -}}
app.kubernetes.io/instance={{ .Release.Name }},app.kubernetes.io/managed-by={{ .Release.Service }}
{{- end }}

{{- define "odradek.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "odradek.operatorName" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* repository:tag, the tag defaulting to the chart's appVersion. Call with (list image ctx). */}}
{{- define "odradek.image" -}}
{{- $image := index . 0 -}}
{{- $ctx := index . 1 -}}
{{- printf "%s:%s" $image.repository (default $ctx.Chart.AppVersion $image.tag | toString) }}
{{- end }}

{{- define "odradek.storageClass" -}}
{{- $storage := index . 0 -}}
{{- $ctx := index . 1 -}}
{{- default $ctx.Values.storageClass $storage.storageClassName }}
{{- end }}

{{/* The BrokerCluster's name (the operator names its pods and Services after it). */}}
{{- define "odradek.clusterName" -}}
{{- default (include "odradek.fullname" .) .Values.cluster.name | trunc 52 | trimSuffix "-" }}
{{- end }}

{{/*
A Kafka config value as Kafka's string form. YAML numbers reach templates as float64, which
print as 6.048e+08: whole numbers are printed as integers.
*/}}
{{- define "odradek.configValue" -}}
{{- if and (kindIs "float64" .) (eq (float64 (int64 .)) .) -}}
{{- int64 . | toString | quote -}}
{{- else -}}
{{- toString . | quote -}}
{{- end -}}
{{- end }}

{{/*
The cluster's inter-broker listener as JSON {name, port, securityProtocol}: the one the
operator and `helm test` connect to (cluster.interBrokerListener, else the first of
cluster.listeners, else the single PLAINTEXT listener on cluster.port).
*/}}
{{- define "odradek.interBrokerListener" -}}
{{- $c := .Values.cluster -}}
{{- $l := dict "name" "PLAINTEXT" "port" $c.port "securityProtocol" "PLAINTEXT" -}}
{{- if $c.listeners -}}
{{- $l = index $c.listeners 0 -}}
{{- range $c.listeners }}{{ if eq .name $c.interBrokerListener }}{{ $l = . }}{{ end }}{{ end -}}
{{- end -}}
{{- toJson (dict "name" $l.name "port" $l.port "securityProtocol" ($l.securityProtocol | default "PLAINTEXT")) -}}
{{- end -}}

{{/* Every broker listener port (the named listeners', else cluster.port). */}}
{{- define "odradek.listenerPorts" -}}
{{- $c := .Values.cluster -}}
{{- $ports := list -}}
{{- range $c.listeners }}{{ $ports = append $ports .port }}{{ end -}}
{{- if not $ports }}{{ $ports = list $c.port }}{{ end -}}
{{- toJson $ports -}}
{{- end -}}
