#!/usr/bin/env bash
# Builds the image the Containerfile describes without a registry or a daemon: the static
# (musl) binary built here, then the Containerfile's final stage — `FROM scratch`, the CA
# roots, `/barrage`, `SSL_CERT_FILE`, user 65534, entrypoint `/barrage` — assembled with
# buildah and written as an OCI archive. Checks that the binary is static and that the
# image's entrypoint runs `barrage --version` in the image's own root with nothing else in it.
# (The Containerfile's build stage needs docker.io/library/rust, which needs a registry this
# machine may not reach; with one, `podman build -f Containerfile .` makes the same image.)
#
#   scripts/static-image.sh [IMAGE (barrage:static)] [OCI_ARCHIVE (target/barrage-image.oci.tar)]
#
# Needs: rustup target x86_64-unknown-linux-musl, musl-tools, buildah (apt-get install -y
# musl-tools buildah), root (buildah's vfs storage, chroot).
set -euo pipefail
cd "$(dirname "$0")/.."
TARGET=x86_64-unknown-linux-musl
IMAGE="${1:-barrage:static}"
OUT="${2:-target/barrage-image.oci.tar}"
die() { echo "error: $*" >&2; exit 1; }
rustup target list --installed | grep -qx "$TARGET" || rustup target add "$TARGET"
command -v musl-gcc > /dev/null || die "musl-gcc missing: apt-get install -y musl-tools"
command -v buildah > /dev/null || die "buildah missing: apt-get install -y buildah"
cargo build --release --locked --target "$TARGET" -p barrage
BIN="${CARGO_TARGET_DIR:-target}/$TARGET/release/barrage"
if readelf -l "$BIN" | grep -q 'Requesting program interpreter'; then
  die "$BIN is dynamically linked"
fi
readelf -d "$BIN" | grep -q NEEDED && die "$BIN needs shared libraries"
echo "static binary: $BIN ($(du -h "$BIN" | cut -f1)), $("$BIN" --version)"

B=(buildah --storage-driver vfs)
ctr="$("${B[@]}" from scratch)"
trap '"${B[@]}" umount "$ctr" > /dev/null 2>&1 || true; "${B[@]}" rm "$ctr" > /dev/null 2>&1 || true' EXIT
"${B[@]}" copy "$ctr" /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
"${B[@]}" copy --chmod 0755 "$ctr" "$BIN" /barrage
"${B[@]}" config --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt --user 65534:65534 \
  --entrypoint '["/barrage"]' --cmd '' "$ctr"
"${B[@]}" commit --quiet "$ctr" "$IMAGE" > /dev/null
rm -f "$OUT"
"${B[@]}" push --quiet "$IMAGE" "oci-archive:$OUT:$IMAGE"
# The image's root holds only what the Containerfile puts there; the entrypoint runs in it.
root="$("${B[@]}" mount "$ctr")"
listing="$(cd "$root" && find . -mindepth 1 | sort | tr '\n' ' ')"
[[ "$listing" == "./barrage ./etc ./etc/ssl ./etc/ssl/certs ./etc/ssl/certs/ca-certificates.crt " ]] ||
  die "unexpected image content: $listing"
version="$(chroot --userspec=65534:65534 "$root" /barrage --version)"
[[ "$version" == "barrage "* ]] || die "/barrage --version in the image printed: $version"
echo "image $IMAGE: $(du -h "$OUT" | cut -f1) OCI archive at $OUT; in its own root, as user 65534: $version"
