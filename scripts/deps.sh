#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages abuseguard builds, runs and tests with,
# skipping those already installed. Needs root (or sudo) only when something
# is missing.
set -euo pipefail

packages=(build-essential cmake pkg-config libmicrohttpd-dev libhiredis-dev
          libsqlite3-dev libsodium-dev libjansson-dev libunistring-dev
          libidn2-dev
          libcmocka-dev libssl-dev openssl libcurl4-openssl-dev
          redis-server python3 python3-jsonschema curl clang-format
          chromium)
# The Debian package and its test: dpkg-shlibdeps for Depends,
# systemd-sysusers and systemd-analyze, strace for the system call filter.
packages+=(dpkg-dev systemd strace)
missing=()
for p in "${packages[@]}"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null |
            grep -q "install ok installed"; then
        missing+=("$p")
    fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || {
        echo "deps: run as root, or install: ${missing[*]}" >&2
        exit 1
    }
    sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
