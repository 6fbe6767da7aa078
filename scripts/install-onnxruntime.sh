#!/usr/bin/env bash
# Installs the ONNX Runtime shared library (CPU, Linux x64) that the container's
# kokoro engine loads at run time, at .cache/onnxruntime/libonnxruntime.so.1.
#
# The library comes from the onnxruntime-node package on the npm registry
# (npm checks the package's integrity hash; no install scripts run), and the
# extracted file is checked against a pinned SHA-256. Running it again when the
# pinned file is already in place does nothing.
set -euo pipefail

version="1.30.0"
member="package/bin/napi-v6/linux/x64/libonnxruntime.so.1"
sha256="${ONNXRUNTIME_SHA256:-ffb75a925ba05e47b235bb66e3e3911714a80b328a9c9425539feb204aa32a23}"

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest_dir="$root/.cache/onnxruntime"
dest="$dest_dir/libonnxruntime.so.1"

if [ -f "$dest" ] && echo "$sha256  $dest" | sha256sum --check --status; then
	echo "onnxruntime $version already installed at $dest"
	exit 0
fi

if ! command -v npm >/dev/null; then
	echo "install-onnxruntime: npm is required to fetch onnxruntime-node@$version; install Node.js/npm" >&2
	exit 1
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent --ignore-scripts "onnxruntime-node@$version" >/dev/null)
tar -xzf "$tmp/onnxruntime-node-$version.tgz" -C "$tmp" "$member"
if ! echo "$sha256  $tmp/$member" | sha256sum --check --status; then
	echo "install-onnxruntime: $member from onnxruntime-node@$version has SHA-256 $(sha256sum "$tmp/$member" | cut -d' ' -f1), want $sha256" >&2
	exit 1
fi
mkdir -p "$dest_dir"
install -m 0644 "$tmp/$member" "$dest.tmp"
mv "$dest.tmp" "$dest"
echo "onnxruntime $version installed at $dest"
