#!/usr/bin/env bash
# Captures the supervised-app fixture (README.md here) from real processes, as root on a machine
# with the cgroup v1 memory and freezer controllers:
#
#   Tests/TestSupport/Fixtures/supervised/capture.sh [BUILD_DIR]   (default .build/debug; from the repo top)
#
# This shell plays the supervisor: it makes the device group mempressure-<its PID>-<random> in
# both hierarchies and an app cgroup Photos below it, and starts a shell that joins that cgroup
# and then runs two hogs: a helper that double-forks (its parent exits, so it is reparented) and
# the app's main process (the shell itself, exec'd). Once both hogs said ready they sleep in
# pause(), so their /proc/PID/{stat,status,smaps,smaps_rollup,cgroup} hold still while copied;
# then everything is killed by the PIDs this script started or found in its own cgroup, and the
# cgroups are removed.
set -euo pipefail
build=${1:-.build/debug}
here=$(cd "$(dirname "$0")" && pwd)
hog="$build/mempressure-hog"
[ -x "$hog" ] || { echo "build first: swift build" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "run as root (it makes cgroups)" >&2; exit 1; }

device="mempressure-$$-$RANDOM$RANDOM"
mem=/sys/fs/cgroup/memory/$device
frz=/sys/fs/cgroup/freezer/$device
tmp=$(mktemp -d /tmp/mempressure-fixture.XXXXXX)
cleanup() {
  exec 4<&- 2>/dev/null || true
  for g in "$mem/Photos" "$frz/Photos"; do
    [ -f "$g/cgroup.procs" ] || continue
    for p in $(cat "$g/cgroup.procs"); do kill -KILL "$p" 2>/dev/null || true; done
  done
  wait 2>/dev/null || true
  for g in "$mem/Photos" "$frz/Photos" "$mem" "$frz"; do
    for _ in $(seq 1 100); do rmdir "$g" 2>/dev/null && break; [ -d "$g" ] || break; sleep 0.01; done
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
mkdir "$mem" "$frz" "$mem/Photos" "$frz/Photos"

mkfifo "$tmp/out"
# The app: joins its cgroup before it runs anything, so all it starts is born inside.
sh -c 'echo $$ > "$1/cgroup.procs" && echo $$ > "$2/cgroup.procs" || exit 1
       ("$3" --dirty 6m --wait signal &)
       exec "$3" --dirty 2m --wait signal' app "$mem/Photos" "$frz/Photos" "$hog" >"$tmp/out" &
main=$!
exec 4<"$tmp/out"
read -r _ <&4
read -r _ <&4
helper=$(grep -vx "$main" "$mem/Photos/cgroup.procs")
echo "main $main (parent $$), helper $helper (parent $(awk '{print $4}' /proc/$helper/stat))"

rm -rf "$here/proc"
mkdir -p "$here/proc"
for pid in "$main" "$helper" $$; do
  mkdir "$here/proc/$pid"
  for f in stat status smaps smaps_rollup cgroup; do cat "/proc/$pid/$f" > "$here/proc/$pid/$f"; done
done
# The /proc/PID/cgroup variants (README.md): the captured one, and three written from it.
cp "$here/proc/$main/cgroup" "$here/v1-memory-and-freezer"
own=$(grep -E '^[0-9]+:memory:' "$here/proc/$$/cgroup" | cut -d: -f3-)
sed -E "s|^([0-9]+):memory:.*|\1:memory:$own|" "$here/v1-memory-and-freezer" > "$here/v1-freezer-only"
sed -E "s|/Photos$||" "$here/v1-memory-and-freezer" > "$here/v1-device-group"
printf '0::/%s/Photos\n' "$device" > "$here/v2"
echo "captured into $here/proc (supervisor $$, device group $device)"
