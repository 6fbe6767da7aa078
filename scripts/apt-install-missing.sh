#!/usr/bin/env bash
# Installs the named Debian packages that are not installed yet, and nothing else: on a machine that has them
# all it does not touch apt at all. Needs root (CI and the project's machines run as root).
set -euo pipefail
missing=()
for p in "$@"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
echo "apt-get install -y ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "apt-install-missing: ${missing[*]} missing and not running as root: install them with sudo apt-get install ${missing[*]}" >&2
	exit 1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
