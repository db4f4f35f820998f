#!/usr/bin/env bash
# The container image and the Kubernetes recipe, checked the way a user would use them (`.ci/run` runs it):
#   1. the manifests of deploy/kubernetes/ against Kubernetes' schemas (kubernetes-validate from PyPI, strict:
#      an unknown or misspelt field fails), for the oldest Kubernetes the recipe supports and a recent one;
#   2. a Debian bookworm base image made here from Debian's packages (debootstrap, then `podman import`),
#      because no image can be pulled on degrade's CI machines;
#   3. `podman build -f Containerfile` on that base, with PREBUILT: the image takes the release binary .ci/run
#      has built (target/release/degrade, or $DEGRADE_BINARY), so CI compiles degrade once;
#   4. in the container: `degrade --version`, then `degrade demo --exit`, which must tell its story as planned.
# Usage: bash ci/container.sh [DIR]   (the demo writes DIR/degrade-demo, kept for the caller; default: a temp dir)
#        bash ci/container.sh --tools-only   (installs what it needs and exits: .ci/run, before the tests)
#        bash ci/container.sh --from-source [DIR]   (step 3 without PREBUILT, as a user's `podman build` runs it:
#            degrade compiled inside the build stage with the `dist` profile, its crates fetched from crates.io.
#            The builder is the Debian base with gcc and this machine's own Rust toolchain, since no Rust image
#            can be pulled here. Not in .ci/run: the fully optimised build takes 15-25 minutes on two cores.)
# Nothing is cached between runs: the images live in a podman storage of their own under a temp dir, removed
# at the end, so each run builds everything afresh and leaves the machine's own podman storage untouched.
set -euo pipefail
cd "$(dirname "$0")/.."

# The schemas' package, pinned so the verdict on the manifests changes only when this line does.
kubernetes_validate_version=1.37.0
# The oldest Kubernetes the recipe needs (Job backoffLimitPerIndex is stable from 1.33) and the newest the
# package knows.
kubernetes_versions=(1.33.0 1.37.0)
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
binary=${DEGRADE_BINARY:-target/release/degrade}
from_source=false
if [ "${1:-}" = --from-source ]; then
    from_source=true
    shift
fi
image=localhost/degrade:ci
base=localhost/degrade-base/debian:bookworm-slim

step_start=$SECONDS
step() {
    echo "ci/container.sh: $1 (after $((SECONDS - step_start)) s)"
}

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v debootstrap >/dev/null; then
    step "installing podman, buildah, runc and debootstrap"
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq podman buildah runc debootstrap >/dev/null
fi
# Run as `python3 -m`, which needs no console script on the PATH (pyenv's shims, for one, are made afterwards).
kubernetes_validate=(python3 -m kubernetes_validate)
if [ "$("${kubernetes_validate[@]}" --version 2>/dev/null)" != "$kubernetes_validate_version" ]; then
    step "installing kubernetes-validate $kubernetes_validate_version"
    python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore \
        "kubernetes-validate==$kubernetes_validate_version"
fi

[ "${1:-}" != --tools-only ] || exit 0

step "validating deploy/kubernetes against Kubernetes ${kubernetes_versions[*]}"
for version in "${kubernetes_versions[@]}"; do
    "${kubernetes_validate[@]}" --strict --quiet --kubernetes-version "$version" deploy/kubernetes/*.yaml
done

$from_source || [ -x "$binary" ] \
    || { echo "ci/container.sh: no degrade binary at $binary (cargo build --release first)" >&2; exit 2; }

work="$(mktemp -d)"
# rootful podman with runc and cgroupfs, as this machine runs containers; its own storage under $work.
podman=(podman --root "$work/storage" --runroot "$work/run" --runtime runc --cgroup-manager=cgroupfs)
cleanup() {
    "${podman[@]}" rm --all --force >/dev/null 2>&1 || true
    "${podman[@]}" rmi --all --force >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

step "making $base from Debian's packages (debootstrap, $mirror)"
debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" > "$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log"; exit 2; }
# What debian:bookworm-slim leaves out too: package caches and lists, documentation, manuals, translations.
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"* \
    "$work/rootfs/usr/share/doc/"* "$work/rootfs/usr/share/man/"* "$work/rootfs/usr/share/locale/"*
tar --numeric-owner -C "$work/rootfs" -c . | "${podman[@]}" import --quiet --change 'CMD ["bash"]' - "$base" >/dev/null
rm -rf "$work/rootfs"

if $from_source; then
    builder=localhost/degrade-builder:ci
    sysroot="$(rustc --print sysroot)"
    step "making $builder: the base with gcc and $(rustc --version) from $sysroot"
    mkdir -p "$work/builder/rust"
    # The toolchain without its documentation (800 MB of HTML the build never reads).
    cp -a "$sysroot/bin" "$sysroot/lib" "$sysroot/libexec" "$work/builder/rust/"
    # This machine's trusted certificates, for cargo to reach crates.io through whatever this machine's own
    # egress requires (a proxy with a CA of its own, on degrade's CI machines); the builder only.
    cp /etc/ssl/certs/ca-certificates.crt "$work/builder/host-ca.crt"
    cat > "$work/builder/Containerfile" << BUILDER
FROM $base
RUN apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq gcc libc6-dev ca-certificates \\
    && rm -rf /var/lib/apt/lists/*
COPY rust /usr/local/rust
COPY host-ca.crt /etc/ssl/certs/host-ca.crt
ENV PATH=/usr/local/rust/bin:\$PATH CARGO_HTTP_CAINFO=/etc/ssl/certs/host-ca.crt
BUILDER
    "${podman[@]}" build --quiet --network host -t "$builder" "$work/builder" >/dev/null
    rm -rf "$work/builder"
    step "building $image from Containerfile, compiling degrade in it (cargo build --locked --profile dist)"
    "${podman[@]}" build --quiet --network host -f Containerfile --build-arg "RUNTIME_IMAGE=$base" \
        --build-arg "BUILDER_IMAGE=$builder" -t "$image" . > "$work/build.log" 2>&1 \
        || { tail -n 40 "$work/build.log"; echo "ci/container.sh: the image did not build from source" >&2; exit 1; }
    expected="degrade $(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -n 1)"
else
    # The build context is this checkout, as a user's is, when the binary is one of the two .dockerignore lets in;
    # a binary elsewhere (a CARGO_TARGET_DIR outside) is copied into a context of its own with the Containerfile.
    context=.
    prebuilt="$binary"
    if [ "$binary" != target/release/degrade ] && [ "$binary" != target/dist/degrade ]; then
        context="$work/context"
        prebuilt=target/release/degrade
        mkdir -p "$context/target/release"
        cp Containerfile .dockerignore "$context/" && cp "$binary" "$context/$prebuilt"
    fi
    step "building $image from Containerfile with $binary"
    # With PREBUILT, the builder stage only copies the binary: the Debian base serves as builder too.
    "${podman[@]}" build --quiet -f Containerfile --build-arg "PREBUILT=$prebuilt" \
        --build-arg "RUNTIME_IMAGE=$base" --build-arg "BUILDER_IMAGE=$base" \
        -t "$image" "$context" >/dev/null
    expected="$("$binary" --version)"
fi

run=("${podman[@]}" run --rm --ulimit nofile=1024:1024 --ulimit nproc=1024:1024 --network host)
step "running degrade --version in the container"
version="$("${run[@]}" "$image" --version)"
if [ "$version" != "$expected" ]; then
    echo "ci/container.sh: the container says '$version', the binary '$expected'" >&2
    exit 1
fi
if [ "$("${run[@]}" --entrypoint id "$image" -u)" = 0 ]; then
    echo "ci/container.sh: the image runs as root" >&2
    exit 1
fi

demo_dir="${1:-$work/demo}"
mkdir -p "$demo_dir"
# The image's user (uid 10001) writes the demo's folder; it is mounted at the same path, so the paths in the
# demo's degrade.toml hold outside the container too.
chown 10001:10001 "$demo_dir"
step "running degrade demo --exit in the container"
"${run[@]}" -v "$demo_dir:$demo_dir" "$image" demo --exit --folder "$demo_dir/degrade-demo" > "$work/demo.txt" 2>&1 \
    || { cat "$work/demo.txt"; echo "ci/container.sh: the demo in the container did not go as planned" >&2; exit 1; }
# The demo's login token is a secret: kept in a file of its owner's, never printed (a CI log is read by many).
token_file="$demo_dir/degrade-demo/api-token"
[ "$(stat -c %a "$token_file")" = 600 ] || { echo "ci/container.sh: $token_file is not 0600" >&2; exit 1; }
token="$(cat "$token_file")"
[ -n "$token" ] || { echo "ci/container.sh: $token_file holds no token" >&2; exit 1; }
if grep -qF "$token" "$work/demo.txt"; then
    echo "ci/container.sh: the demo printed its login token" >&2
    exit 1
fi
step "done: $version in $image answered and told the demo as planned"
