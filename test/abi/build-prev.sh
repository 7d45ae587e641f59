#!/usr/bin/env bash
# Build the previous release's libplexus.so and headers for
# test/abi/t_abi_prev_release.sh (docs/abi.md): release 0.1 from git history,
# with plain cc -O1 -g (nothing of the build under test in it), once per
# commit: a stamp holding the commit says it is built.
# Usage: test/abi/build-prev.sh PREV_DIR COMMIT
# Exits 0 when PREV_DIR/stamp names COMMIT and the library is there; the log
# is PREV_DIR/build.log. .ci/run runs it beside the normal build, so the
# normal stage's t_abi_prev_release.sh finds it built and does not wait for it.
set -u
prev=${1:?usage: build-prev.sh PREV_DIR COMMIT} commit=${2:?usage: build-prev.sh PREV_DIR COMMIT}
src=$(cd "$(dirname "$0")/../.." && pwd)
full=$(git -C "$src" rev-parse "$commit^{commit}") || exit 1
if [ "$(cat "$prev/stamp" 2>/dev/null)" != "$full" ] || [ ! -f "$prev/obj/.libs/libplexus.so" ]; then
    rm -rf "$prev"
    mkdir -p "$prev/src" "$prev/obj"
    git -C "$src" archive "$full" | tar -x -C "$prev/src"
    (
        set -e
        cd "$prev/src" && ./autogen.sh
        # Under dash when there is one, as scripts/build.sh (libtool's calls).
        if [ -z "${CONFIG_SHELL:-}" ] && [ -x /bin/dash ]; then export CONFIG_SHELL=/bin/dash; fi
        cd "$prev/obj" && ${CONFIG_SHELL:-/bin/sh} ../src/configure -q --disable-static --enable-shared CFLAGS="-O1 -g" \
            --prefix="$prev/nowhere"
        # libtool through this tree's config/px-libtool.sh (0.1's objects are
        # compiled by the same compiler line, without libtool's script's
        # ~0.25 CPU s per object; the library is linked by 0.1's libtool).
        make -j2 libplexus.la LIBTOOL="\$(SHELL) $src/config/px-libtool.sh '\$(SHELL)' \$(top_builddir)/libtool"
    ) >"$prev/build.log" 2>&1 && echo "$full" >"$prev/stamp"
fi
[ "$(cat "$prev/stamp" 2>/dev/null)" = "$full" ]
