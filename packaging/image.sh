#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the abuseguard container image from Debian packages only, nothing
# pulled from an image registry: mmdebstrap makes a Debian 12 root file
# system (the Essential set, systemd-sysusers for the package's postinst,
# and abuseguard's .deb with what it depends on), and podman imports
# it with the image's configuration. docs/container.md says how to run it;
# docs/decisions/container-image.md says why it is built so.
#
# Usage:
#   image.sh [--repo DIR] [--deb FILE] [--build-dir DIR] [--tag NAME]
#            [--tar FILE] [--no-import]
#   image.sh --fetch DIR [--deb FILE] [--build-dir DIR]
#   image.sh --make-deb DIR [--build-dir DIR]
#
# --fetch DIR  downloads every package the image needs from Debian's mirror
#              into DIR and makes it a flat apt repository; does nothing
#              when DIR already holds the set this .deb needs.
# --repo DIR   builds offline from such a repository, touching no network.
#              Without it the packages come from deb.debian.org.
# --deb FILE   the abuseguard .deb to install; by default cpack makes one
#              from the Release build in --build-dir (build-release/ of
#              this tree, configured and built if missing).
# --make-deb DIR  only makes that .deb, in DIR, and prints its path.
# --tag NAME   the image's name (localhost/abuseguard); tagged with the
#              package's version and with latest.
# --tar FILE   keep the root file system's tarball at FILE.
# --no-import  stop after the tarball (with --tar).
#
# SOURCE_DATE_EPOCH (default: the time of the tree's last commit) makes the
# tarball reproducible: the same packages and epoch give the same bytes,
# which become the image's one layer. PODMAN overrides the podman command,
# word-split, for example "podman --root /tmp/s --runroot /tmp/r".
#
# The hooks' "$1" is the root, expanded by mmdebstrap's shell, not here:
# shellcheck disable=SC2016
set -eu

src=$(cd "$(dirname "$0")/.." && pwd)
suite=bookworm
mirror=http://deb.debian.org/debian
# The image's user: the package's abuseguard user, with its id pinned so
# that a volume or a secret owned by it stays readable by the next image.
uid=10001
port=8080
state=/var/lib/abuseguard
secrets=/run/secrets
# Besides the Essential set and the package's Depends: the standalone
# systemd-sysusers, which satisfies "systemd | systemd-sysusers" without
# all of systemd (apt would take the first alternative); and the CA
# certificates, without which no https:// webhook and no rediss:// Redis
# verifies.
extra="systemd-standalone-sysusers ca-certificates"

fetch="" repo="" deb="" build_dir="" tag=localhost/abuseguard tar=""
make_deb=""
import=1
while [ $# -gt 0 ]; do
    case $1 in
    --fetch) fetch=$2; shift ;;
    --repo) repo=$2; shift ;;
    --deb) deb=$2; shift ;;
    --make-deb) make_deb=$2; shift ;;
    --build-dir) build_dir=$2; shift ;;
    --tag) tag=$2; shift ;;
    --tar) tar=$2; shift ;;
    --no-import) import=0 ;;
    *) sed -n '/^# Usage/,/^# word-split/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
    esac
    shift
done
if [ -n "$fetch" ] && [ -n "$repo" ]; then
    echo "image.sh: --fetch and --repo exclude each other" >&2
    exit 2
fi
if [ "$import" = 0 ] && [ -z "$tar" ]; then
    echo "image.sh: --no-import needs --tar" >&2
    exit 2
fi
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
    SOURCE_DATE_EPOCH=$(git -C "$src" log -1 --format=%ct 2>/dev/null) || {
        echo "image.sh: not a git checkout: set SOURCE_DATE_EPOCH" >&2
        exit 2
    }
fi
export SOURCE_DATE_EPOCH
# A repository path must be absolute in its sources line.
[ -n "$fetch" ] && mkdir -p "$fetch" && fetch=$(cd "$fetch" && pwd)
[ -n "$repo" ] && repo=$(cd "$repo" && pwd)

work=$(mktemp -d "${TMPDIR:-/tmp}/ag-image-XXXXXX")
trap 'rm -rf "$work"' EXIT
# dash runs no EXIT trap on a signal: exit, which does.
trap 'exit 130' INT TERM HUP

# The .deb: given, or made with cpack from a Release build (a sanitizer
# build refuses to package, see package.cmake).
if [ -z "$deb" ]; then
    build=${build_dir:-$src/build-release}
    if [ ! -f "$build/CPackConfig.cmake" ]; then
        cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release \
            -DAG_TESTS=OFF >/dev/null
    fi
    cmake --build "$build" -j"$(nproc)" >/dev/null
    cpack -G DEB -B "$work/deb" --config "$build/CPackConfig.cmake" \
        >/dev/null
    deb=$(ls "$work"/deb/abuseguard_*.deb)
fi
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
if [ -n "$make_deb" ]; then
    mkdir -p "$make_deb"
    cp "$deb" "$make_deb/"
    echo "$(cd "$make_deb" && pwd)/$(basename "$deb")"
    exit 0
fi
version=$(dpkg-deb -f "$deb" Version)

# The mmdebstrap call both modes share; the rest of its arguments (the
# hooks of the mode, the target, the mirrors) follow in "$@".
strap() {
    # The package's own sysusers line with the id pinned, in /etc, which
    # systemd-sysusers reads before /usr/lib: the postinst then makes the
    # user with this id.
    mkdir -p "$work/sysusers"
    sed "s/^u abuseguard - /u abuseguard $uid /" \
        "$src/packaging/abuseguard.sysusers" > "$work/sysusers/abuseguard.conf"
    grep -q "^u abuseguard $uid " "$work/sysusers/abuseguard.conf" || {
        echo "image.sh: no 'u abuseguard -' line in abuseguard.sysusers" >&2
        exit 1
    }
    # The .deb from a repository of its own: a path given to --include
    # would have to exist inside the root too.
    mkdir -p "$work/own"
    cp "$deb" "$work/own/"
    (cd "$work/own" && dpkg-scanpackages . 2>/dev/null > Packages)
    # mmdebstrap's merged-usr hooks make the root merged-/usr and install
    # usr-is-merged, which says so; without them apt picks usrmerge for
    # init-system-helpers, and perl with it.
    mmdebstrap --quiet --variant=essential \
        --hook-dir=/usr/share/mmdebstrap/hooks/merged-usr \
        --include="$extra abuseguard=$version" \
        --dpkgopt=force-unsafe-io \
        --dpkgopt='path-exclude=/usr/share/doc/*' \
        --dpkgopt='path-include=/usr/share/doc/*/copyright' \
        --dpkgopt='path-exclude=/usr/share/man/*' \
        --dpkgopt='path-exclude=/usr/share/info/*' \
        --dpkgopt='path-exclude=/usr/share/locale/*' \
        --dpkgopt='path-exclude=/usr/share/lintian/*' \
        --essential-hook='mkdir -p "$1/etc/sysusers.d"' \
        --essential-hook="copy-in $work/sysusers/abuseguard.conf /etc/sysusers.d" \
        "$@" "deb [trusted=yes] copy://$work/own ./" >&2
}

if [ -n "$fetch" ]; then
    # What decides the set: the suite, the architecture, the extra
    # packages and the .deb's dependencies. The same key, and the cache
    # is complete.
    key=$(printf '%s\n' "$suite" "$(dpkg --print-architecture)" "$extra" \
        "$(dpkg-deb -f "$deb" Depends)" "$(sed -n '/^strap()/,/^}/p' "$0")" |
        sha256sum | cut -d' ' -f1)
    if [ -f "$fetch/Packages" ] && [ -f "$fetch/key" ] &&
            [ "$(cat "$fetch/key")" = "$key" ]; then
        echo "image.sh: $fetch is up to date" >&2
        exit 0
    fi
    mkdir -p "$work/pool"
    # The whole build, online, keeping what apt downloaded.
    strap --skip=download/empty --skip=essential/unlink \
        --customize-hook="sync-out /var/cache/apt/archives $work/pool" \
        "$suite" /dev/null \
        "deb $mirror $suite main" "deb $mirror $suite-updates main" \
        "deb $mirror-security $suite-security main"
    rm -f "$work"/pool/abuseguard_*.deb "$work"/pool/lock
    rm -rf "$work/pool/partial" "$fetch/pool" "$fetch/Packages" "$fetch/key"
    mv "$work/pool" "$fetch/pool"
    # A Release file naming the suite: mmdebstrap takes the Essential set
    # from the packages of the suite it was given.
    (cd "$fetch" && dpkg-scanpackages --multiversion pool 2>/dev/null \
        > Packages &&
        printf 'Origin: Debian\nSuite: %s\nCodename: %s\nSHA256:\n %s %s %s\n' \
            "$suite" "$suite" "$(sha256sum < Packages | cut -d' ' -f1)" \
            "$(wc -c < Packages)" Packages > Release)
    echo "$key" > "$fetch/key"
    echo "image.sh: $(find "$fetch/pool" -name '*.deb' | wc -l) packages" \
        "in $fetch" >&2
    exit 0
fi

if [ -n "$repo" ]; then
    # apt's copy: method copies each package into the root, so nothing
    # needs mounting; the repository is our own cache, made by --fetch
    # from the signed mirror.
    set -- "deb [trusted=yes] copy://$repo ./"
    [ -f "$repo/Packages" ] || {
        echo "image.sh: no Packages in $repo (run image.sh --fetch $repo)" >&2
        exit 1
    }
else
    set -- "deb $mirror $suite main" "deb $mirror $suite-updates main" \
        "deb $mirror-security $suite-security main"
fi
out=${tar:-$work/rootfs.tar}
# The postinst made two secrets; an image holds none (they come mounted),
# so they go, with the apt configuration that names the mirror, and the
# build host's name and resolver, which mmdebstrap copies in, mode and
# all (the runtime mounts its own over the empty file). No program keeps a set-id bit: nothing in the
# image changes user.
strap \
    --customize-hook='cd "$1/etc/abuseguard" && rm secret.key admin.token' \
    --customize-hook='rm -f "$1/etc/apt/sources.list" "$1/etc/hostname"' \
    --customize-hook=': > "$1/etc/resolv.conf"' \
    --customize-hook='chmod 0644 "$1/etc/resolv.conf"' \
    --customize-hook='find "$1" -xdev -type f -perm /6000 \
        -exec chmod ug-s {} +' \
    --customize-hook='find "$1/usr/share/doc" -mindepth 2 ! -type d \
        ! -name copyright -delete' \
    --customize-hook='sed -i /force-unsafe-io/d \
        "$1/etc/dpkg/dpkg.cfg.d/99mmdebstrap"' \
    "$suite" "$out" "$@"
tar -xOf "$out" ./etc/passwd | grep -q "^abuseguard:x:$uid:$uid:" || {
    echo "image.sh: the root has no abuseguard user with id $uid" >&2
    exit 1
}
[ "$import" = 1 ] || exit 0

created=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ)
revision=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
${PODMAN:-podman} import \
    --change "USER $uid:$uid" \
    --change 'ENTRYPOINT ["/usr/bin/abuseguard"]' \
    --change "ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV ABUSEGUARD_LISTEN=0.0.0.0:$port" \
    --change "ENV ABUSEGUARD_DB=$state/policies.db" \
    --change "ENV ABUSEGUARD_SECRET_FILE=$secrets/secret.key" \
    --change "EXPOSE $port/tcp" \
    --change "VOLUME $state" \
    --change "WORKDIR $state" \
    --change "STOPSIGNAL SIGTERM" \
    --change "LABEL org.opencontainers.image.title=abuseguard" \
    --change "LABEL org.opencontainers.image.description=\"login and OTP \
abuse protection as an HTTP service\"" \
    --change "LABEL org.opencontainers.image.version=$version" \
    --change "LABEL org.opencontainers.image.revision=$revision" \
    --change "LABEL org.opencontainers.image.created=$created" \
    --change "LABEL org.opencontainers.image.licenses=Apache-2.0" \
    --message "abuseguard $version from Debian $suite packages" \
    "$out" "$tag:$version" >/dev/null
${PODMAN:-podman} tag "$tag:$version" "$tag:latest"
echo "$tag:$version"
