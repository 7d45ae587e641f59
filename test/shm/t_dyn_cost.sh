#!/usr/bin/env bash
# What a process with dynamic peers (docs/peers.md) spends besides its
# messages, counted (not timed):
# - the progress hook of a process with a listener reads the clock only
#   every so many progress passes, not on every one (dyn_clock);
# - btl/shm reads this host's identity (boot id, pid and ipc namespaces)
#   from /proc once per process, not on every connection (strace over 10
#   connect/echo/disconnect cycles of dyn_app).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
clk=$B/test/shm/dyn_clock
app=$B/test/peer/dyn_app
need_built "$clk"
need_built "$app"
. "$PX_SRC/test/lib/peers.sh"
peers_setup

if timeout 60 "$app" contact 2>&1 | grep -q "built without libsodium"; then
    skip "dynamic peers" "built without libsodium (install libsodium-dev, configure again)"
    tap_done
fi

# 1. clock reads per progress pass while a listener is open
out=$(timeout -s KILL 120 "$clk" 200000 2>&1)
echo "$out" | sed 's/^/# /'
passes=$(echo "$out" | sed -n 's/^passes \([0-9]*\) clock_reads \([0-9]*\)$/\1/p')
reads=$(echo "$out" | sed -n 's/^passes \([0-9]*\) clock_reads \([0-9]*\)$/\2/p')
check "a listener's progress hook reads the clock on fewer than 1 in 8 progress passes ($reads reads in $passes passes)" \
    test -n "$reads" -a -n "$passes" -a "0$reads" -lt $((${passes:-0} / 8))

# 2. /proc reads of btl/shm per connection
if ! command -v strace >/dev/null; then
    skip "btl/shm reads its identity once" "strace is not installed (apt-get install strace)"
    tap_done
fi
c=$T/cost.contact
# LeakSanitizer cannot run under ptrace: the sanitizer build's leak check
# is off for these two traced processes (the other tests keep it).
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
timeout -s KILL 240 strace -f -qq -e trace=openat -o "$T/srv.st" "$app" server "$c" 10 \
    >"$T/srv" 2>"$T/srv.err" </dev/null &
pids+=("$!")
spid=$!
for _ in $(seq 1 400); do
    [ -s "$c" ] && break
    sleep 0.05
done
PX_MCA_btl=self,shm timeout -s KILL 240 strace -f -qq -e trace=openat -o "$T/cli.st" \
    "$app" cycles "$c" 10 >"$T/cli" 2>&1 </dev/null
rc=$?
check "10 connect/echo/disconnect cycles over shm under strace (exit $rc)" test "$rc" -eq 0
[ "$rc" = 0 ] || sed 's/^/# /' "$T/cli" "$T/srv" "$T/srv.err" | head -20
s=$(grep -c 'random/boot_id' "$T/srv.st")
k=$(grep -c 'random/boot_id' "$T/cli.st")
check "btl/shm reads the boot id at most twice per process over 10 connections (accepting side $s, connecting side $k)" \
    test "$s" -le 2 -a "$k" -le 2
kill "$spid" 2>/dev/null
tap_done
