#!/usr/bin/env bash
# examples/objstore, the object store of docs/transfer.md, on 3 ranks over
# shm and over ofi (tcp;ofi_rxm): every client fetches every object, small
# ones by two-sided messages and large ones by one-sided reads of the owner's
# region, and every checksum matches; objstore_threshold moves the switch; a
# value it refuses is reported with its source.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
OS=$B/test/xfer/objstore
need_built "$PXRUN" "$OS"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export PX_MCA_mca_component_path=$B/.libs FI_TCP_IFACE=lo
run() { timeout -s KILL 120 "$@" >"$T/out" 2>"$T/err" </dev/null; rc=$?; }

for cfg in shm "ofi:PX_MCA_btl=self,ofi"; do
    name=${cfg%%:*}
    envs=()
    [ "$cfg" != "$name" ] && envs=("${cfg#*:}" "PX_MCA_btl_ofi_provider_include=tcp;ofi_rxm")
    label=$([ "$name" = shm ] && echo shm:map || echo ofi:get)
    run env "${envs[@]}" "$PXRUN" -n 3 "$OS"
    out=$(cat "$T/out")
    check "objstore over $name: exit 0" test $rc -eq 0
    check "objstore over $name: both clients' checksums all match" \
        [ "$(grep -c 'fetched 48 objects: .* every checksum matches' "$T/out")" -eq 2 ]
    check "objstore over $name: small objects by two-sided messages below 32 KiB (the default)" \
        grep -q "fetched 48 objects: [1-9][0-9]* two-sided (below 32768 bytes)" "$T/out"
    check "objstore over $name: large ones by one-sided reads via $label" \
        grep -q "[1-9][0-9]* one-sided reads (via $label)" "$T/out"
    check "objstore over $name: the owner served the small ones" contains "$out" "small ones by two-sided messages"
    run env "${envs[@]}" "$PXRUN" -n 3 --mca objstore_threshold 4k "$OS" --objects 64 --max 2M
    check "objstore over $name, objstore_threshold=4k, 64 objects to 2 MiB: checksums match" \
        [ "$(grep -c 'fetched 64 objects: .* (below 4096 bytes), .* every checksum matches' "$T/out")" -eq 2 ]
done
run env PX_MCA_objstore_threshold=-1 "$PXRUN" -n 2 "$OS" --objects 8
check "a refused objstore_threshold: the run goes on with the default" \
    grep -q "below 32768 bytes.*every checksum matches" "$T/out"
check "... after saying which value, from where, and what is accepted" \
    contains "$(cat "$T/err")" 'invalid value "-1" for variable objstore_threshold (size) from environment variable PX_MCA_objstore_threshold; accepted'
tap_done
