# shellcheck shell=bash
# install.sh: the build under test, installed. Source it after tap.sh.
#
#   px_staged_install DEST [LOG]
#       DEST becomes a staging root of the build under test, as
#       `make -C $PX_BUILD install DESTDIR=DEST` makes it; make's output goes
#       to LOG; returns make's status. Under test/run-tests.sh the install
#       is made once, before the tests start (PX_TEST_STAGE, its log and
#       status beside it), and copied here: `make install` relinks the
#       plugins in the build's .libs/ (libtool moves each one aside while it
#       relinks it), so a test that installed while another test loaded
#       plugins could make a plugin missing for it. A test run alone (no
#       PX_TEST_STAGE) installs for itself.
px_staged_install() {
    local dest=$1 log=${2:-/dev/null} rc
    if [ -n "${PX_TEST_STAGE:-}" ] && [ -f "$PX_TEST_STAGE.rc" ]; then
        cat "$PX_TEST_STAGE.log" >"$log" 2>/dev/null
        rc=$(cat "$PX_TEST_STAGE.rc")
        [ "$rc" = 0 ] || return "${rc:-1}"
        mkdir -p "$dest" && cp -a "$PX_TEST_STAGE/." "$dest/"
        return
    fi
    make -C "$PX_BUILD" install DESTDIR="$dest" >"$log" 2>&1
}
