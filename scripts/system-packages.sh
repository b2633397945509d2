#!/usr/bin/env bash
# The Debian packages the tests need (a real Chromium for the dashboard's browser test, CJK
# fonts for its pages, HAProxy to check the compose balancer's configuration, the OpenMP
# runtime the dev dependency LightGBM links to): installed when missing and this user can, otherwise
# one line that names them and the command, at once.
set -euo pipefail
PACKAGES=(chromium fonts-wqy-zenhei haproxy libgomp1)

missing=()
for package in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
    || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  echo "missing Debian packages: ${missing[*]}; install them with: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "missing packages: ${missing[*]} (no apt-get here: install them with your package manager)" >&2
  exit 1
fi
echo "installing Debian packages: ${missing[*]}"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null
