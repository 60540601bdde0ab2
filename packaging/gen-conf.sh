#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes abuseguard-help.txt and abuseguard.conf into DIR from BINARY's
# --help, so that the packaged configuration file lists exactly the flags
# the binary has (see gen-conf.awk). Run by the install rules.
# Usage: gen-conf.sh BINARY DIR
set -eu
binary=$1
dir=$2
mkdir -p "$dir"
"$binary" --help > "$dir/abuseguard-help.txt"
awk -f "$(dirname "$0")/gen-conf.awk" "$dir/abuseguard-help.txt" \
    > "$dir/abuseguard.conf.tmp"
mv "$dir/abuseguard.conf.tmp" "$dir/abuseguard.conf"
