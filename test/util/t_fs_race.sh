#!/usr/bin/env bash
# px-test: waits (mostly waiting on daemons, timeouts and leases; runs in the waiting lane)
# Another local user (nobody, through setpriv) races the removal of a job's
# folder in /dev/shm (world-writable, sticky): it makes a folder of the name
# (or takes the name once it is free), fills it with subfolders, and swaps
# each subfolder whose removal has begun for a symbolic link to a folder of
# root's files with the same names. Nothing outside the job's own files may
# be removed:
#  - px_fs_remove_tree on a folder of that other user leaves it alone;
#  - pxrun with two ranks (which once gave up the name mid-job, so that the
#    other user could make it again before pxrun's final removal walked it).
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
RACE=$B/test/util/fs_race
PXRUN=$B/tools/pxrun/pxrun
PROBE=$B/test/pxrun/px_probe
need_built "$RACE" "$PXRUN" "$PROBE"
if [ "$(id -u)" != 0 ] || ! command -v setpriv >/dev/null || ! id nobody >/dev/null 2>&1; then
    skip "another user's folder survives px_fs_remove_tree" "needs root, setpriv and the user nobody"
    skip "pxrun's end of job removes nothing of another user" "needs root, setpriv and the user nobody"
    tap_done
fi
T=$(mktemp -d)
att=
target=/dev/shm/plexus-fsrace-$$
NOBODY=(setpriv --reuid=nobody --regid=nogroup --clear-groups)
as_nobody() { "${NOBODY[@]}" "$@"; }
# The jobs' backing folder: like /dev/shm (tmpfs, world-writable, sticky),
# but only this test's jobs use it.
backing=/dev/shm/plexus-fsrace-bk-$$
cleanup() {
    [ -n "$att" ] && kill "$att" 2>/dev/null && wait "$att" 2>/dev/null
    as_nobody rm -rf "$target" 2>/dev/null
    for d in "$backing"/*; do # what the other user made under a job's name
        [ -e "$d" ] && as_nobody rm -rf "$d" 2>/dev/null
    done
    rm -rf "$T" "$backing"
}
trap cleanup EXIT
chmod 711 "$T"
NSUB=20
NFILES=500
victim=$T/victim
mkdir -m 700 "$victim"
refill() { for i in $(seq 0 $((NFILES - 1))); do : >"$victim/f$i"; done; }
refill
count() { find "$victim" -type f | wc -l; }

# 1. The removal routine, run by root on a folder that nobody made.
"${NOBODY[@]}" "$RACE" make "$target" "$victim" $NSUB $NFILES 20 >"$T/att1" 2>&1 &
att=$!
for _ in $(seq 200); do grep -q ready "$T/att1" && break; sleep 0.1; done
"$RACE" remove "$target"
# The removal has returned: nothing removes anything any more, so the other
# user stops here (it would swap until its 20 s end: a removal that leaves
# the folder alone never lets it finish by itself).
kill $att 2>/dev/null
wait $att 2>/dev/null
echo "# px_fs_remove_tree: $(count) of root's $NFILES files left ($(grep -c swapped "$T/att1") folders swapped)"
check "px_fs_remove_tree on another user's folder: none of root's $NFILES files behind its links removed" \
    [ "$(count)" -eq $NFILES ]
check "px_fs_remove_tree leaves another user's folder where it is" [ -d "$target" ]
as_nobody rm -rf "$target"

# 2. pxrun: the other user watches the backing folder for the job's folder
#    and takes its name as soon as it is free mid-job (within 2.5 s of its
#    making; the job then holds on for 5 s more, so that is not the job's end).
mkdir -m 1777 "$backing"
refill
"${NOBODY[@]}" "$RACE" watch "$backing" "plexus-$(id -u)-" "$victim" $NSUB $NFILES 30 2.5 >"$T/att2" 2>&1 &
att=$!
for _ in $(seq 200); do grep -q watching "$T/att2" && break; sleep 0.1; done
timeout -s KILL 60 "$PXRUN" -n 2 --mca btl self,shm --mca btl_shm_backing_dir "$backing" \
    "$PROBE" hold 5 >"$T/out" 2>"$T/err" </dev/null
rc=$?
kill $att 2>/dev/null
wait $att 2>/dev/null
echo "# pxrun: $(count) of root's $NFILES files left; the other user: $(grep -c recreated "$T/att2") name taken, $(grep -c swapped "$T/att2") folders swapped"
check "pxrun -n 2 with the other user racing: exit 0" [ "$rc" -eq 0 ]
[ "$rc" -eq 0 ] || sed 's/^/# /' "$T/err" | head -5
check "pxrun -n 2: the job's shm folder name is never free for another user mid-job" \
    [ -z "$(grep recreated "$T/att2")" ]
check "pxrun -n 2: none of root's $NFILES files removed through the other user's links" \
    [ "$(count)" -eq $NFILES ]
tap_done
