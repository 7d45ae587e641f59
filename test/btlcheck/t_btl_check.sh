#!/usr/bin/env bash
# px_btl_check (tools/px_btl_check) on every transport here: btl/self, btl/shm,
# btl/ofi over tcp;ofi_rxm, the out-of-tree example plugin (UNIX datagram
# sockets; every check must pass, as for the built-in ones), a deliberately broken
# plugin (test/btlcheck/broken.c) whose defects must show as "not ok" on the
# right check; plus the errors for an unknown component and bad options.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
CHECK=$B/tools/px_btl_check/px_btl_check
PXRUN=$B/tools/pxrun/pxrun
[ -x "$CHECK" ] && [ -x "$PXRUN" ] || { not_ok "px_btl_check and pxrun are built"; tap_done; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PX_MCA_mca_component_path=$B/.libs FI_TCP_IFACE=lo
run() { timeout -s KILL 400 "$CHECK" --pxrun "$PXRUN" "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }
# The TAP px_btl_check printed is well formed: a plan, then that many lines.
wellformed() {
    local plan n
    plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$T/out")
    n=$(grep -cE '^(not )?ok [0-9]+ - ' "$T/out")
    [ -n "$plan" ] && [ "$plan" -eq "$n" ]
}
show() { sed 's/^/#   /' "$T/out" | head -40 >&2; sed 's/^/#   stderr: /' "$T/err" | head -20 >&2; }

# btl/ofi at its defaults: the peer-death check usually sees a connection
# reset; were rank 0 still connecting to the dead rank, a refused probe of its
# port (btl_ofi_connect_probe, 1 s; test/ofi/ofi_module_test) reports it well
# within the tool's 20 s wait, where btl_ofi_connect_timeout (30 s) would not.
for t in "self" "shm -n 2" "shm -n 4" "ofi -n 3 --mca btl_ofi_provider_include tcp;ofi_rxm"; do
    # shellcheck disable=SC2086
    run $t
    check "px_btl_check $t: exit status 0 (every check ok)" test "$rc" -eq 0 || show
    check "px_btl_check $t: TAP plan and lines agree" wellformed
    check "px_btl_check $t: no not ok" eval '! grep -q "^not ok" "$T/out"'
    [ "$t" = "shm -n 4" ] && cp "$T/out" "$T/shm4.out"
done
# What ran and what was skipped in that shm -n 4 run, for the record.
cp "$T/shm4.out" "$T/out"
grep -E '^(not )?ok' "$T/out" | sed 's/^/# shm -n 4: /'
check "shm: the peer-death checks ran (not skipped)" \
    contains "$(grep 'a peer that dies' "$T/out")" "fired after"
check "shm: the many-peers check ran with 4 ranks (not skipped)" \
    grep -qE '^ok [0-9]+ - many peers: every rank to every rank at once, data checked$' "$T/out"

# The example plugin (UNIX datagram sockets between ranks on this host),
# built from examples/btl_example: every check ok with 2 and 4 ranks,
# including the peer-death checks and the many-peers check.
dest=$T/example
cp -r "$PX_SRC/examples/btl_example" "$dest"
cc -shared -fPIC -std=gnu11 -Wall -Wextra -Werror -I"$PX_SRC" -I"$B" -o "$dest/plexus_btl_example.so" \
    "$dest/example.c" -L"$B/.libs" -lplexus 2>"$T/cc.log"
if [ -f "$dest/plexus_btl_example.so" ]; then
    for n in 2 4; do
        PX_MCA_mca_component_path=$dest:$B/.libs run example -n $n
        check "example plugin -n $n: exit status 0 (every check ok)" test "$rc" -eq 0 || show
        check "example plugin -n $n: TAP plan and lines agree" wellformed
        check "example plugin -n $n: no not ok" eval '! grep -q "^not ok" "$T/out"'
        check "example plugin -n $n: no error printed by the variable system" \
            eval '! grep -q "plexus: error" "$T/err"'
        check "example plugin -n $n: the module's error callback named the dead peer" \
            contains "$(grep 'a peer that dies: the module' "$T/out")" "btl/example: the peer's socket is gone"
        check "example plugin -n $n: sends to the dead peer failed (not skipped)" \
            grep -qE '^ok [0-9]+ - a peer that dies: a send to it fails.*all failed' "$T/out"
    done
    check "example plugin -n 4: the many-peers check ran (not skipped)" \
        grep -qE '^ok [0-9]+ - many peers: every rank to every rank at once, data checked$' "$T/out"
    grep -E '^(not )?ok' "$T/out" | sed 's/^/# example -n 4: /'
else
    not_ok "the example plugin builds: $(head -3 "$T/cc.log")"
fi

# A broken plugin: each defect fails the check that covers it, with a reason.
export PX_MCA_mca_component_path=$B/test/btlcheck/.libs:$B/.libs
PX_BROKEN_BTL=corrupt run broken -n 1
check "broken (corrupt): exit status 1" test "$rc" -eq 1
check "broken (corrupt): TAP plan and lines agree" wellformed
line=$(grep -E '^not ok [0-9]+ - active messages' "$T/out")
check "broken (corrupt): the active-message check is not ok" test -n "$line" || show
check "... naming the damaged byte" contains "$line" "byte 1000 is"
check "broken (corrupt): the small-message ordering check still passes" \
    grep -qE '^ok [0-9]+ - ordering' "$T/out"
# The callback never comes: the check waits for it as long as --timeout
# says (20 s by default) before it reports. One rank, nothing else to wait
# for: 5 s is ample for the checks that must still pass.
PX_BROKEN_BTL=nocallback run --timeout 5 broken -n 1
line=$(grep -E '^not ok [0-9]+ - completion callbacks' "$T/out")
check "broken (nocallback): the completion-callback check is not ok" test -n "$line" || show
check "... saying the callback ran 0 times" contains "$line" "completion callback ran 0 times"
check "broken (nocallback): flush is not ok too" grep -qE '^not ok [0-9]+ - flush' "$T/out"
check "broken (nocallback): active messages with BTL ownership still pass" \
    grep -qE '^ok [0-9]+ - active messages' "$T/out"
PX_BROKEN_BTL= run broken -n 1
check "broken with no defect: every check ok" test "$rc" -eq 0 || show

# Errors a user can make.
run nosuchbtl
check "unknown component: exit status 2" test "$rc" -eq 2
check "... named, with the available ones" contains "$(cat "$T/err")" \
    'no btl component named "nosuchbtl" here; available: self (built in), shm (built in)'
run shm -n 9
check "-n 9: refused with the accepted range" contains "$(cat "$T/err")" "must be 1 to 8"
run
check "no component: usage" contains "$(cat "$T/err")" "name the BTL component to check"
tap_done
