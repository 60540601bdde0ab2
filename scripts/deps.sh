#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages abuseguard builds and runs with
# (scripts/dev.sh), and with --test those its tests need besides
# (scripts/test.sh), skipping those already installed. --list prints the
# packages instead. Needs root (or sudo) only when something is missing.
set -euo pipefail

test=0 list=0
for arg in "$@"; do
    case $arg in
    --test) test=1 ;;
    --list) list=1 ;;
    *) echo "usage: deps.sh [--test] [--list]" >&2; exit 2 ;;
    esac
done

# Building and running: the compiler and the libraries, and the
# redis-server scripts/dev.sh starts.
packages=(build-essential cmake pkg-config libmicrohttpd-dev libhiredis-dev
          libsqlite3-dev libsodium-dev libjansson-dev libunistring-dev
          libidn2-dev libssl-dev libcurl4-openssl-dev libmaxminddb-dev
          redis-server)
if [ "$test" = 1 ]; then
    # The unit tests (cmocka), the integration tests (python3 and its
    # jsonschema and yaml, curl, openssl for TLS certificates and the
    # fingerprint vectors), the formatting check, the console in chromium; the
    # Debian package and its test (dpkg-shlibdeps for Depends,
    # systemd-sysusers and systemd-analyze, strace for the system call
    # filter); the clients' conformance suite (Go; Python installed into
    # a venv from Debian's setuptools and wheel; node comes with the
    # machine); the network tests' MMDB files, written by Debian's
    # MaxMind::DB::Writer and read back with mmdblookup; the monitoring
    # rules checked and unit-tested by promtool (Debian's prometheus); the
    # container image, built by mmdebstrap and run by podman under runc
    # (its compose file read with python3-yaml).
    packages+=(libcmocka-dev python3 python3-jsonschema python3-yaml curl
               openssl clang-format chromium dpkg-dev systemd strace golang-go
               python3-venv python3-setuptools python3-wheel
               libmaxmind-db-writer-perl mmdb-bin prometheus
               mmdebstrap podman runc)
fi
if [ "$list" = 1 ]; then
    printf '%s\n' "${packages[@]}"
    exit 0
fi
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
