#!/usr/bin/env bash
# px_init with the self transport excluded: no transport reaches the process
# itself, so px_init fails and the error names both processes, their host,
# and every module tried with its reason.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/init_probe
host=$(hostname)

out=$("$probe" 2>&1); rc=$?
check "px_init succeeds with the default transports" test "$rc" -eq 0
check "rank 0 reaches itself through self" contains "$out" "transport to 0: self"

out=$(PX_MCA_btl=^self "$probe" 2>&1); rc=$?
check "PX_MCA_btl=^self: px_init fails (exit 2)" test "$rc" -eq 2
check "the error names the peer: rank 0 and its host" contains "$out" "no transport reaches rank 0 (host $host)"
check "the error names the calling process and its host" contains "$out" "from rank 0 (host $host)"
check "the error says where the transports come from" contains "$out" 'variable "btl"'
# Every module that was tried is listed with its reason; self was not tried.
if echo "$out" | grep -q "Modules tried"; then
    n=$(echo "$out" | sed -n 's/.*Modules tried (\([0-9]*\)).*/\1/p')
    lines=$(echo "$out" | grep -cE '^ +[a-z]+ \(exclusivity [0-9]+\): .+')
    check "each of the $n modules tried has a line with its reason" test "$n" -eq "$lines"
else
    check "no module at all is said so" contains "$out" "No BTL module was available"
fi
# Components that returned no module are named (shm is built in and has no
# peer in a singleton), and so is the selection variable's value.
if echo "$out" | grep -q "Components that offered no module"; then
    check "components that declined in init are named (shm)" contains "$out" " shm"
fi
check "the selection variable's value is shown" contains "$out" "Selection variable btl = ^self."
check "self is not among the modules tried" sh -c "! echo \"\$1\" | grep -q '^ *self (exclusivity'" _ "$out"
check "px_init's failure code is printed" contains "$out" "px_init failed"

# Only self and a module that declines everything: both reasons shown.
out=$(PX_MCA_btl=self "$probe" 2>&1); rc=$?
check "PX_MCA_btl=self alone serves a singleton" test "$rc" -eq 0
tap_done
