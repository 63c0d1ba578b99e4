#!/usr/bin/env bash
# `meson install` puts tune, libtune (shared and static), tune.h and tune.pc in
# place, and the C example builds against the installed tune.pc and runs.
# Usage: test_install.sh BUILD_DIR SOURCE_ROOT
set -eu
build=$1
src=$2
dest=$(mktemp -d /tmp/tune-install-XXXXXX)
trap 'rm -rf "$dest"' EXIT
meson install -C "$build" --destdir "$dest" --quiet >/dev/null
prefix=$(meson introspect "$build" --buildoptions | /usr/bin/python3 -c \
    'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
root="$dest$prefix"
for f in bin/tune include/tune.h; do
    [ -e "$root/$f" ] || { echo "missing $f"; exit 1; }
done
pc=$(find "$root" -name tune.pc | head -1)
[ -n "$pc" ] || { echo "missing tune.pc"; exit 1; }
libdir=$(dirname "$(dirname "$pc")")
ls "$libdir"/libtune.so* "$libdir"/libtune.a >/dev/null
export PKG_CONFIG_PATH=$(dirname "$pc")
flags=$(pkg-config --define-variable=prefix="$root" --cflags --libs tune)
cc -std=c11 -Wall -Wextra -Werror "$src/examples/quickstart.c" $flags -lm -o "$dest/quickstart"
LD_LIBRARY_PATH="$libdir" "$dest/quickstart" | grep -q '^best trial '
# The static library links too (with the dependencies tune.pc lists as private).
cc -std=c11 "$src/examples/quickstart.c" -I"$root/include" "$libdir/libtune.a" \
    $(pkg-config --define-variable=prefix="$root" --libs --static tune) -lm -o "$dest/quickstart_static"
"$dest/quickstart_static" | grep -q '^best trial '
"$root/bin/tune" --version | grep -q '^tune '
echo "install ok: $root"
