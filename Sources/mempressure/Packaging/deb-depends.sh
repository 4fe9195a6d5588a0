#!/usr/bin/env bash
# Prints the Depends line of the Debian package for the ELF files given: dpkg-shlibdeps reads the
# libraries each one loads and names their packages with the lowest versions whose symbols they
# use (from the libraries' symbols files), as a Debian build does. It wants a debian/control:
# a scratch one is made for it, and removed.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: deb-depends.sh ELF..." >&2; exit 2; }
files=()
for f in "$@"; do files+=("$(realpath "$f")"); done
scratch=$(mktemp -d /tmp/mempressure-deb-depends.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/debian"
printf 'Source: mempressure\n\nPackage: mempressure\nArchitecture: any\n' > "$scratch/debian/control"
line=$(cd "$scratch" && dpkg-shlibdeps -O "${files[@]}" 2>"$scratch/log") || { cat "$scratch/log" >&2; exit 1; }
# shlibs:Depends=libc6 (>= 2.34), ...
printf '%s\n' "${line#shlibs:Depends=}"
