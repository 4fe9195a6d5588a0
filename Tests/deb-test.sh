#!/usr/bin/env bash
# The Debian package as a user gets it (`make test-deb`): installed with apt, which brings its
# dependencies, then run with the Swift toolchain's directory hidden — a mount namespace of its
# own with an empty tmpfs over it, and a PATH without it — and purged at the end, however the
# test ends. It checks:
#   - no installed binary loads a library from the toolchain, none is missing (ldd);
#   - `mempressure --version`, `top`, `vm PID` print what they should;
#   - `supervise` starts, launches an app (a program without the client) that `apps` lists, and
#     stops on SIGTERM, ending the app;
#   - `export` serves /metrics with the exporter's metrics;
#   - the systemd units pass `systemd-analyze verify`;
#   - the man page is where man looks, and the C client builds an app through pkg-config;
#   - purging removes every file the package installed.
# Run as root on a machine where the package is not already installed.
set -euo pipefail
deb=${1:?usage: deb-test.sh PACKAGE.deb}
deb=$(realpath "$deb")
toolchain=${SWIFT_TOOLCHAIN_DIR:-/opt/swift}
[ "$(id -u)" = 0 ] || { echo "deb-test: run as root (it installs the package)" >&2; exit 1; }
if dpkg -s mempressure >/dev/null 2>&1; then
  echo "deb-test: the package mempressure is installed already; not touching it (dpkg --purge mempressure first)" >&2
  exit 1
fi
scratch=$(mktemp -d /tmp/mempressure-deb-test.XXXXXX)
installed=0
cleanup() {
  local rc=$?
  if [ "$installed" = 1 ]; then
    dpkg --purge mempressure >/dev/null 2>&1 || { echo "deb-test: could not purge mempressure" >&2; rc=1; }
  fi
  rm -rf "$scratch"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "deb-test: $(dpkg-deb --field "$deb" Package Version Architecture Depends | tr '\n' ' ')"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$deb" >"$scratch/apt.log" 2>&1 \
  || { cat "$scratch/apt.log" >&2; echo "deb-test: apt-get install failed" >&2; exit 1; }
installed=1
dpkg -L mempressure | sort > "$scratch/files"
echo "deb-test: installed $(grep -c . "$scratch/files") paths"

# Everything below runs where the toolchain cannot be seen.
cat > "$scratch/checks.sh" <<'CHECKS'
set -euo pipefail
scratch=$1 toolchain=$2 version=$3
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
fail() { echo "deb-test: FAILED: $*" >&2; exit 1; }
if [ -d "$toolchain" ]; then
  mount -t tmpfs -o ro,size=4k none "$toolchain"
  [ -z "$(ls -A "$toolchain")" ] || fail "$toolchain is still visible"
fi
! command -v swift >/dev/null 2>&1 || fail "swift is still on PATH"
for b in mempressure mempressure-commands mempressure-server mempressure-exec mempressure-guard mempressure-workload mempressure-hog; do
  libs=$(ldd "/usr/bin/$b" 2>&1) || true
  ! grep -q "not found" <<<"$libs" || fail "$b: a library is missing: $(grep 'not found' <<<"$libs" | tr -s ' \t' ' ')"
  ! grep -q "$toolchain" <<<"$libs" || fail "$b loads a library from $toolchain"
done
libs=$(ldd /usr/bin/mempressure 2>&1) || true
grep -q "not a dynamic executable" <<<"$libs" || fail "mempressure is not fully static: $(head -3 <<<"$libs")"
echo "deb-test: no binary loads anything from $toolchain; none misses a library; mempressure loads none"

[ "$(mempressure --version)" = "$version" ] || fail "mempressure --version printed $(mempressure --version), not $version"
mempressure top --limit 5 > "$scratch/top.txt" || fail "mempressure top exited $?"
grep -qi "footprint" "$scratch/top.txt" || fail "mempressure top printed no table: $(head -3 "$scratch/top.txt")"
sleep 31996 & sleeper=$!
mempressure vm "$sleeper" > "$scratch/vm.txt" || fail "mempressure vm exited $?"
kill "$sleeper"; wait "$sleeper" 2>/dev/null || true
grep -q "sleep" "$scratch/vm.txt" || fail "mempressure vm did not name the process: $(head -3 "$scratch/vm.txt")"
echo "deb-test: --version, top and vm ran"

# supervise: an app without the client, listed by `apps`, ended with the supervisor.
dir=$scratch/run
mempressure supervise --dir "$dir" > "$scratch/supervise.log" 2>&1 & supervisor=$!
for _ in $(seq 1 300); do [ -S "$dir/admin.sock" ] && break; kill -0 "$supervisor" 2>/dev/null || break; sleep 0.1; done
[ -S "$dir/admin.sock" ] || { cat "$scratch/supervise.log" >&2; fail "the supervisor did not listen on $dir/admin.sock"; }
mempressure app launch S --no-client --dir "$dir" -- /bin/sleep 31995 > "$scratch/launch.txt" 2>&1 || { cat "$scratch/launch.txt" >&2; fail "app launch failed"; }
mempressure apps --dir "$dir" > "$scratch/apps.txt" || fail "mempressure apps exited $?"
grep -qE "^S +" "$scratch/apps.txt" || { cat "$scratch/apps.txt" >&2; fail "apps does not list S"; }
app=
for p in /proc/[0-9]*; do
  [ "$(tr '\0' ' ' < "$p/cmdline" 2>/dev/null)" = "/bin/sleep 31995 " ] && app=${p#/proc/}
done
[ -n "$app" ] || fail "the app is not running"
kill -TERM "$supervisor"
wait "$supervisor" || fail "the supervisor exited $? on SIGTERM"
! kill -0 "$app" 2>/dev/null || fail "the app $app outlived its supervisor"
echo "deb-test: supervise launched an app, listed it, and ended it on SIGTERM"

# export: /metrics on a port the kernel chooses.
mempressure export --listen 127.0.0.1:0 2> "$scratch/export.log" & exporter=$!
url=
for _ in $(seq 1 300); do
  url=$(sed -n 's/^mempressure export: serving \(http[^ ]*\)$/\1/p' "$scratch/export.log")
  [ -n "$url" ] && break; kill -0 "$exporter" 2>/dev/null || break; sleep 0.1
done
[ -n "$url" ] || { cat "$scratch/export.log" >&2; fail "the exporter did not say where it serves"; }
python3 -c 'import sys, urllib.request; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=30).read().decode())' "$url" > "$scratch/metrics.txt" \
  || fail "no answer from $url"
grep -q '^mempressure_build_info{' "$scratch/metrics.txt" || fail "the scrape has no mempressure_build_info"
grep -q '^mempressure_app_footprint_bytes{' "$scratch/metrics.txt" || fail "the scrape has no mempressure_app_footprint_bytes"
kill -TERM "$exporter"; wait "$exporter" || fail "the exporter exited $? on SIGTERM"
echo "deb-test: export served $(grep -c '^mempressure_' "$scratch/metrics.txt") mempressure_ samples"

systemd-analyze verify /usr/lib/systemd/system/mempressure-supervise.service /usr/lib/systemd/system/mempressure-export.service \
  > "$scratch/verify.txt" 2>&1 || { cat "$scratch/verify.txt" >&2; fail "systemd-analyze verify"; }
if grep -q mempressure "$scratch/verify.txt"; then cat "$scratch/verify.txt" >&2; fail "systemd-analyze verify warned about the units"; fi
echo "deb-test: both units pass systemd-analyze verify"

[ "$(man -w mempressure 2>/dev/null || true)" = /usr/share/man/man1/mempressure.1.gz ] || fail "man -w mempressure does not find the page"
cat > "$scratch/app.c" <<'C'
#include <mempressure_client.h>
int main(void) { return 0; }
C
cc -o "$scratch/app" "$scratch/app.c" $(pkg-config --cflags --libs --static mempressure-client) || fail "a C app does not build with pkg-config mempressure-client"
echo "deb-test: man finds the page; a C app builds with the client through pkg-config"
CHECKS
unshare --mount --propagation private bash "$scratch/checks.sh" "$scratch" "$toolchain" "$(dpkg-deb --field "$deb" Version)"

dpkg --purge mempressure >/dev/null
installed=0
left=0
while read -r f; do
  if [ -f "$f" ] || [ -L "$f" ]; then echo "deb-test: left after purge: $f" >&2; left=1; fi
done < "$scratch/files"
[ "$left" = 0 ] || exit 1
echo "deb-test: purged, nothing left; passed"
