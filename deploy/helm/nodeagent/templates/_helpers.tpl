{{/* The name of every object: the release's name where it already says nodeagent, else <release>-nodeagent. */}}
{{- define "nodeagent.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* What the DaemonSet selects its pods by; never changed by an upgrade. */}}
{{- define "nodeagent.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object: kustomize's (deploy/base) and Helm's. */}}
{{- define "nodeagent.labels" -}}
{{ include "nodeagent.selectorLabels" . }}
app.kubernetes.io/part-of: nodeagent
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The agent's image: image.tag, else the released chart's appVersion; a source checkout's chart names no published image. */}}
{{- define "nodeagent.image" -}}
{{- $tag := .Values.image.tag | default .Chart.AppVersion -}}
{{- if eq $tag "v0.0.0-dev" -}}
{{- fail "image.tag is empty and this chart is a source checkout's (appVersion v0.0.0-dev), whose image nobody published: set --set image.tag=<the tag make push printed>, or install a released chart (oci://ghcr.io/nodeagent-io/charts/nodeagent)" -}}
{{- end -}}
{{- printf "%s:%s" .Values.image.repository $tag -}}
{{- end -}}

{{/* The port of httpAddress, which the pod exposes as "http". */}}
{{- define "nodeagent.port" -}}
{{- .Values.httpAddress | splitList ":" | last -}}
{{- end -}}

{{/* The agent's arguments for the mode; the same, in the same order, as deploy/overlays/<mode>/args.yaml (daemonset.yaml for csi). */}}
{{- define "nodeagent.args" -}}
{{- if eq .Values.mode "csi" }}
- csi
- --state-dir={{ .Values.rootDir }}/csi
- --kubelet-root-dir={{ .Values.kubeletRootDir }}
- --http-address={{ .Values.httpAddress }}
- --logging-format={{ .Values.loggingFormat }}
- --read-as={{ .Values.csi.readAs }}
{{- if include "nodeagent.keepsTokens" . }}
- --token-dir={{ .Values.csi.tokenDir }}
{{- end }}
{{- if .Values.csi.secrets.enabled }}
{{- if ne .Values.csi.readAs "pod" }}
{{- fail "csi.secrets.enabled needs csi.readAs=pod: the driver reads a Secret only as the pod whose volume names it, never as itself" }}
{{- end }}
- --secrets
{{- end }}
{{- if .Values.csi.checkAccess }}
- --check-access
{{- end }}
{{- with .Values.syncFrequency }}
{{- fail "syncFrequency: the csi mode has no pod syncs; leave it empty" }}
{{- end }}
{{- else }}
- run
- --root-dir={{ .Values.rootDir }}
- --http-address={{ .Values.httpAddress }}
{{- if eq .Values.mode "before" }}
- --configmap-strategy=Cache
- --cache-invalidation=every-sync
{{- else if eq .Values.mode "after" }}
- --configmap-strategy=Cache
- --cache-invalidation=first-reference
{{- else if eq .Values.mode "watch" }}
- --configmap-strategy=Watch
{{- else }}
{{- fail (printf "mode %q: want before, after, watch or csi" .Values.mode) }}
{{- end }}
- --logging-format={{ .Values.loggingFormat }}
{{- with .Values.syncFrequency }}
- --sync-frequency={{ . }}
{{- end }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . }}
{{- end }}
{{- end -}}

{{/* The analyzer's name: its Deployment, ServiceAccount and ClusterRoles (as deploy/analyze-serve names them for the release nodeagent). */}}
{{- define "nodeagent.analyzeName" -}}
{{- printf "%s-analyze" (include "nodeagent.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What the analyzer's Deployment selects its pod by: never the agents' labels, which the DaemonSet selects by. */}}
{{- define "nodeagent.analyzeSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-analyze
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of the analyzer's objects. */}}
{{- define "nodeagent.analyzeLabels" -}}
{{ include "nodeagent.analyzeSelectorLabels" . }}
app.kubernetes.io/part-of: nodeagent
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The webhook's name: its Deployment, Service, ServiceAccount, roles and configuration (as deploy/overlays/csi-webhook names them for the release nodeagent). */}}
{{- define "nodeagent.webhookName" -}}
{{- printf "%s-webhook" (include "nodeagent.fullname" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* What the webhook's Deployment and Service select its pods by. */}}
{{- define "nodeagent.webhookSelectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-webhook
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of the webhook's objects. */}}
{{- define "nodeagent.webhookLabels" -}}
{{ include "nodeagent.webhookSelectorLabels" . }}
app.kubernetes.io/part-of: nodeagent
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/*
The release's namespace must admit the agents' hostPath volumes: a Pod
Security level other than privileged refuses them, and the DaemonSet would
create no pod. lookup reads the namespace on install and upgrade (it is
empty in helm template and a client-side dry run, where kube-system is not
found either). A namespace that does not exist yet is one Helm is about to
create (--create-namespace) with no label, so the cluster's default level
would apply, which the chart cannot read: it refuses, with the commands
that make the namespace labelled, unless podSecurity.checkNewNamespace is
false.
*/}}
{{- define "nodeagent.checkPodSecurity" -}}
{{- $ns := lookup "v1" "Namespace" "" .Release.Namespace }}
{{- if $ns }}
{{- $level := get ($ns.metadata.labels | default dict) "pod-security.kubernetes.io/enforce" }}
{{- if and $level (ne $level "privileged") }}
{{- fail (printf "namespace %s enforces the Pod Security level %q, which refuses the agents' hostPath volumes: label it with `kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged --overwrite`, or install into a namespace of its own" .Release.Namespace $level .Release.Namespace) }}
{{- end }}
{{- else if and .Values.podSecurity.checkNewNamespace (lookup "v1" "Namespace" "" "kube-system") }}
{{- fail (printf "namespace %s does not exist yet: Helm's --create-namespace would make it with no Pod Security label, and where the cluster's default level is baseline or restricted it would admit none of the agents' pods (they mount hostPath volumes). Create it labelled, then install without --create-namespace: `kubectl create namespace %s && kubectl label namespace %s pod-security.kubernetes.io/enforce=privileged`. Where the cluster's default level is privileged, --set podSecurity.checkNewNamespace=false installs into the namespace Helm creates" .Release.Namespace .Release.Namespace .Release.Namespace) }}
{{- end }}
{{- end }}

{{/* The labels of the uninstall check's objects (uninstall-check.yaml): never the agents' labels, which the DaemonSet and the PodMonitor select by. */}}
{{- define "nodeagent.uninstallCheckLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}-uninstall-check
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: nodeagent
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* "true" where the driver keeps the pods' tokens in csi.tokenDir (mode csi, read as the pods), else empty. */}}
{{- define "nodeagent.keepsTokens" -}}
{{- if and (eq .Values.mode "csi") (eq .Values.csi.readAs "pod") .Values.csi.tokenDir -}}true{{- end -}}
{{- end -}}
