#!/usr/bin/env bash
# The software libibverbs.so.1 (test/softverbs) is faithful enough that verbs clients
# nobody here wrote run on it when its folder comes first in LD_LIBRARY_PATH:
# ibv_devices and ibv_devinfo (ibverbs-utils), ibv_rc_pingpong between two processes
# (InfiniBand LIDs, RoCE GIDs, with completion events), and perftest's ib_send_lat,
# ib_write_bw and ib_read_lat. It exports the default symbols and version nodes of
# the system's libibverbs.so.1, and libfabric's verbs provider finds its device.
# The two sides of a client exchange over TCP on 127.0.0.1 and a free port.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
LIB=$B/test/softverbs/lib
if [ ! -e "$LIB/libibverbs.so.1" ]; then
    if grep -q 'S\["PX_HAVE_VERBS_TRUE"\]="#"' "$B/config.status" 2>/dev/null; then
        skip "softverbs" "configured without libibverbs-dev (the library is not built)"
        tap_done
    fi
    not_ok "$LIB/libibverbs.so.1 is built (make build-tests)"
    tap_done
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$LIB PX_SOFTVERBS_DIR=$T/reg
unset PX_SOFTVERBS_DEVICES PX_SOFTVERBS_LINK_LAYER PX_SOFTVERBS_FAIL_WR PX_SOFTVERBS_DELAY_US \
    PX_SOFTVERBS_QP_ERROR_AFTER PX_SOFTVERBS_FAIL_STATUS PX_SOFTVERBS_PORTS

syms() { objdump -T "$1" | awk '$0 !~ /\*UND\*/ && NF >= 7 && $(NF-1) !~ /^\(/ {print $(NF-1), $NF}' | sort; }
sysl=/usr/lib/x86_64-linux-gnu/libibverbs.so.1
[ -e "$sysl" ] || sysl=$(ldconfig -p | awk '/libibverbs.so.1 /{print $NF; exit}')
if [ -n "$sysl" ] && [ -e "$sysl" ]; then
    syms "$sysl" >"$T/sys.syms"
    # (less its own test hook, px_softverbs_counts in PX_SOFTVERBS_1.0)
    syms "$LIB/libibverbs.so.1" | grep -v PX_SOFTVERBS_1.0 >"$T/sv.syms"
    check "exports the symbols and version nodes of $sysl ($(wc -l <"$T/sys.syms") names)" \
        diff "$T/sys.syms" "$T/sv.syms"
else
    not_ok "the system's libibverbs.so.1 is installed (libibverbs1), to compare symbols with"
fi

have() { command -v "$1" >/dev/null 2>&1; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# pair NAME SERVER_CMD... -- CLIENT_ARGS...: run the server, then the client with the
# same command plus CLIENT_ARGS and 127.0.0.1; both must exit 0 (retries on a lost port)
pair() {
    local name=$1 try port
    shift
    local -a srv=() cli=()
    while [ "$1" != "--" ]; do srv+=("$1"); shift; done
    shift
    cli=("$@")
    for try in 1 2 3; do
        port=$(free_port)
        timeout -s KILL 120 "${srv[@]}" -p "$port" >"$T/$name.srv" 2>&1 </dev/null &
        local spid=$!
        local i
        for i in $(seq 100); do
            ss -ltn 2>/dev/null | grep -q "127.0.0.1:$port \|\*:$port \|0.0.0.0:$port \|\[::\]:$port " && break
            sleep 0.1
        done
        timeout -s KILL 120 "${srv[@]}" "${cli[@]}" -p "$port" 127.0.0.1 >"$T/$name.cli" 2>&1 </dev/null
        crc=$?
        wait $spid
        src=$?
        grep -qi "couldn't listen\|Couldn't connect\|bind" "$T/$name.srv" "$T/$name.cli" || break
    done
    [ $src -eq 0 ] && [ $crc -eq 0 ] && return 0
    echo "# $name: server exit $src, client exit $crc"
    sed 's/^/# srv: /' "$T/$name.srv" | tail -8
    sed 's/^/# cli: /' "$T/$name.cli" | tail -8
    return 1
}

if have ibv_devinfo && have ibv_devices && have ibv_rc_pingpong; then
    out=$(PX_SOFTVERBS_DEVICES=2 ibv_devices 2>&1)
    check "ibv_devices lists softverbs0 and softverbs1 (PX_SOFTVERBS_DEVICES=2)" \
        eval 'contains "$out" softverbs0 && contains "$out" softverbs1'
    out=$(ibv_devinfo -v 2>&1)
    check "ibv_devinfo: port 1 PORT_ACTIVE, InfiniBand, a LID" \
        eval 'contains "$out" "PORT_ACTIVE" && contains "$out" "link_layer:		InfiniBand" && contains "$out" "port_lid:		1"'
    out=$(PX_SOFTVERBS_LINK_LAYER=eth ibv_devinfo -v 2>&1)
    check "ibv_devinfo: RoCE (PX_SOFTVERBS_LINK_LAYER=eth): Ethernet link layer, GIDs v1 and v2" \
        eval 'contains "$out" "link_layer:		Ethernet" && contains "$out" "GID[  0]:		fe80:" && contains "$out" "RoCE v2"'
    out=$(PX_SOFTVERBS_LINK_LAYER=fddi ibv_devinfo 2>&1)
    check "a bad PX_SOFTVERBS_LINK_LAYER is named with what is accepted" \
        contains "$out" 'PX_SOFTVERBS_LINK_LAYER="fddi" is not valid: expected ib'

    check "ibv_rc_pingpong, InfiniBand (LIDs), 500 iterations, two processes" \
        pair rc_ib ibv_rc_pingpong -d softverbs0 -n 500 --
    check "ibv_rc_pingpong: both sides report 500 iters" \
        eval 'grep -q "500 iters" "$T/rc_ib.srv" && grep -q "500 iters" "$T/rc_ib.cli"'
    check "ibv_rc_pingpong -e (completion channel events), 4 KiB messages" \
        pair rc_ev ibv_rc_pingpong -d softverbs0 -n 300 -e -s 4096 --
    check "ibv_rc_pingpong, RoCE (GID index 1), 300 iterations" \
        env PX_SOFTVERBS_LINK_LAYER=eth bash -c "$(declare -f pair free_port); T=$T; pair rc_roce ibv_rc_pingpong -d softverbs0 -g 1 -n 300 --"
else
    not_ok "ibverbs-utils is installed (ibv_devinfo, ibv_rc_pingpong: scripts/deps.sh)"
fi

if have ib_send_lat && have ib_write_bw && have ib_read_lat; then
    check "ib_send_lat -n 300, two processes" pair send_lat ib_send_lat -d softverbs0 -i 1 -n 300 --
    check "ib_send_lat: a latency line for 2-byte messages" \
        grep -Eq '^ *2 +300 +[0-9.]+' "$T/send_lat.cli"
    check "ib_write_bw -s 65536 -n 1000 --report_gbits, two processes" \
        pair write_bw ib_write_bw -d softverbs0 -i 1 -s 65536 -n 1000 --report_gbits --
    check "ib_write_bw: a bandwidth line for 65536-byte messages" \
        grep -Eq '^ *65536 +1000 +[0-9.]+ +[0-9.]+' "$T/write_bw.cli"
    check "ib_read_lat -n 300, two processes" pair read_lat ib_read_lat -d softverbs0 -i 1 -n 300 --
    check "ib_read_lat: a latency line" grep -Eq '^ *2 +300 +[0-9.]+' "$T/read_lat.cli"
    check "ib_write_bw on RoCE (-x 0), 1000 x 64 KiB" \
        env PX_SOFTVERBS_LINK_LAYER=eth bash -c "$(declare -f pair free_port); T=$T; pair write_bw_roce ib_write_bw -d softverbs0 -x 0 -s 65536 -n 1000 --"
else
    not_ok "perftest is installed (ib_send_lat, ib_write_bw, ib_read_lat: scripts/deps.sh)"
fi

if have fi_info; then
    out=$(timeout 60 fi_info -p verbs 2>&1)
    check "libfabric's verbs provider lists the softverbs0 domain (fi_info -p verbs)" \
        contains "$out" "domain: softverbs0"
fi

left=$(find "$T/reg" -name '*.qp*' 2>/dev/null | wc -l)
check "clients that exited cleanly left no QP registry entries" test "$left" -eq 0
tap_done
