#!/usr/bin/env bash
# A rendezvous request that carries the message's first bytes
# (runtime_rndv_first_frag; docs/api.md, "Protocols and their variables"):
# first_frag_probe.c under pxrun -n 2 sends sizes around the eager limit, the
# fragment size and the read size, posted first, unexpected and truncated,
# every byte checked, over btl/ofi (net or tcp;ofi_rxm on lo, where the
# plugin is built) by RDMA get and by pipelined fragments with
# runtime_rndv_first_frag=auto, and over btl/shm with it on (auto leaves
# shm alone); the carried bytes are used (verbose) where the variable says so
# and only there (off, the default, carries none); RNDV headers
# whose carried length lies are refused with an error and never matched.
. "$PX_SRC/test/lib/tap.sh"
probe=$PX_BUILD/test/runtime/first_frag_probe
pxrun=$PX_BUILD/tools/pxrun/pxrun
need_built "$probe" "$PX_BUILD/test/runtime/first_frag_inject" "$pxrun"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export FI_TCP_IFACE=lo FI_NET_IFACE=lo PX_MCA_runtime_wait_timeout=60
run() { # description, then environment assignments
    local d=$1
    shift
    env "$@" PX_MCA_runtime_verbose=20 timeout -s KILL 120 "$pxrun" -n 2 "$probe" inject \
        </dev/null >"$T/out" 2>"$T/err"
    rc=$?
    n=$(grep -c ': 0 errors' "$T/out")
    carried=$(grep -c 'carried its first' "$T/err")
    if [ "$rc" -eq 0 ] && [ "$n" -eq 2 ]; then ok "$d: every byte"; else
        not_ok "$d: every byte (exit $rc)"
        head -20 "$T/out" "$T/err" | sed 's/^/# /'
    fi
}

ofi=0
[ -e "$PX_BUILD/.libs/plexus_btl_ofi.so" ] && command -v fi_info >/dev/null && ofi=1
if [ $ofi = 1 ]; then
    for proto in auto pipeline; do
        run "ofi, rndv $proto, first bytes carried (auto)" PX_MCA_btl=self,ofi \
            PX_MCA_btl_ofi_domain=lo PX_MCA_runtime_rndv_protocol=$proto \
            PX_MCA_runtime_rndv_first_frag=auto
        # 13 sizes - the ones not above the eager limit (64 KiB +- 1: 3), 3 ways, 2 directions
        check "ofi, rndv $proto: the receiver took the carried bytes of every rendezvous ($carried)" \
            test "$carried" -ge 60
    done
    run "ofi, rndv auto, first bytes not carried (the default, off)" PX_MCA_btl=self,ofi \
        PX_MCA_btl_ofi_domain=lo
    check "ofi, off (the default): no rendezvous carried bytes" test "$carried" -eq 0
else
    skip "btl/ofi" "plexus_btl_ofi.so or fi_info is missing"
fi
for proto in auto pipeline; do
    run "shm, rndv $proto, first bytes carried (on)" PX_MCA_btl=self,shm \
        PX_MCA_runtime_rndv_protocol=$proto PX_MCA_runtime_rndv_first_frag=on
    check "shm, rndv $proto, on: the receiver took the carried bytes" test "$carried" -ge 60
done
probe=$PX_BUILD/test/runtime/first_frag_inject # the same, linked with libpxcore.la: injects too
run "shm, auto: nothing carried" PX_MCA_btl=self,shm PX_MCA_runtime_rndv_first_frag=auto
check "shm, auto: no rendezvous carried bytes (shm is not a network transport)" test "$carried" -eq 0
errs=$(cat "$T/err")
out=$(cat "$T/out")
check "a lying RNDV is never matched: the receive gets the real message" \
    contains "$out" "inject: recv value 4242 (success)"
check "a carried length beyond the bytes that follow is refused" \
    contains "$errs" "dropped a malformed rendezvous request from rank 0: it says it carries 1000000 bytes of a 1000-byte message, but 64 bytes follow"
check "a carried length not less than the message is refused" \
    contains "$errs" "it says it carries 64 bytes of a 64-byte message, but 64 bytes follow"
check "no room for the length is refused" contains "$errs" "it says it carries 0 bytes of a 64-byte message, but 4 bytes follow"
check "fewer bytes than follow is refused" contains "$errs" "it says it carries 10 bytes of a 1000-byte message, but 64 bytes follow"
tap_done
