#!/usr/bin/env bash
# Deploy hcq to a comma three / 3X over SSH (AGNOS, user `comma`, SSH key set up in the comma
# settings): cross-build the `hcq` CLI and `hcq-comma` for aarch64-unknown-linux-gnu
# (`cargo comma-build`), copy them, the `hcq` wrapper (DEV defaults to QCOM) and the example
# bundles to the profile's install directory (/data/hcq), then run `hcq-comma check` there.
#
# Usage: boards/comma/deploy.sh HOST [--no-build] [--no-check] [--dry-run]
#   HOST        the device's address (its IP on your network, or an ssh config alias)
#   --no-build  use the binaries already in target/aarch64-unknown-linux-gnu/release
#   --no-check  do not run `hcq-comma check` on the device after copying
#   --dry-run   print the ssh/scp commands instead of running them
# Environment: HCQ_COMMA (a host hcq-comma binary to read the profile from; default: cargo run),
#   HCQ_COMMA_RUNNER (a command to start it with, e.g. qemu-aarch64 -L /usr/aarch64-linux-gnu),
#   SSH_USER (default: the profile's user).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
HOST=""; BUILD=1; CHECK=1; DRY=0
for a in "$@"; do
  case "$a" in
    --no-build) BUILD=0 ;;
    --no-check) CHECK=0 ;;
    --dry-run) DRY=1 ;;
    -*) echo "deploy.sh: unknown option $a" >&2; exit 2 ;;
    *) [ -z "$HOST" ] || { echo "deploy.sh: one HOST only" >&2; exit 2; }; HOST="$a" ;;
  esac
done
[ -n "$HOST" ] || { sed -n '7,15p' "$0" >&2; exit 2; }

comma() {
  # shellcheck disable=SC2086 # HCQ_COMMA_RUNNER is a command line (an emulator and its flags)
  if [ -n "${HCQ_COMMA:-}" ]; then ${HCQ_COMMA_RUNNER:-} "$HCQ_COMMA" "$@"; else cargo run -q -p hcq-board-comma --bin hcq-comma -- "$@"; fi
}
field() { comma profile | awk -v k="$1" '$1 == k { $1 = ""; sub(/^ /, ""); print }'; }
DIR="$(field install_dir)"
USER_="${SSH_USER:-$(field ssh_user)}"
TARGET="$(field target)"
[ -n "$DIR" ] && [ -n "$USER_" ] && [ -n "$TARGET" ] || { echo "deploy.sh: could not read the board profile" >&2; exit 1; }
BIN="target/$TARGET/release"
DEST="$USER_@$HOST"

run() { if [ "$DRY" = 1 ]; then echo "+ $*"; else "$@"; fi; }

if [ "$BUILD" = 1 ]; then run cargo comma-build; fi
if [ "$DRY" = 0 ]; then
  for b in hcq hcq-comma; do
    [ -x "$BIN/$b" ] || { echo "deploy.sh: $BIN/$b is missing (run cargo comma-build)" >&2; exit 1; }
  done
fi
TMP="$(mktemp -d)"; trap 'rm -rf "$TMP"' EXIT
comma wrapper --real "$DIR/bin/hcq.bin" > "$TMP/hcq"
run ssh "$DEST" "mkdir -p '$DIR/bin' '$DIR/examples'"
run scp "$BIN/hcq" "$DEST:$DIR/bin/hcq.bin"
run scp "$BIN/hcq-comma" "$TMP/hcq" "$DEST:$DIR/bin/"
run scp -r examples/. "$DEST:$DIR/examples/"
run ssh "$DEST" "chmod +x '$DIR/bin/hcq' '$DIR/bin/hcq.bin' '$DIR/bin/hcq-comma'"
if [ "$CHECK" = 1 ]; then run ssh "$DEST" "'$DIR/bin/hcq-comma' check"; fi
echo "deployed to $DEST:$DIR; run: ssh $DEST $DIR/bin/hcq run $DIR/examples/mlp --check"
