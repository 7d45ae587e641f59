#!/usr/bin/env bash
# Pictures of the figures: px_perf --plot after a run (SVG and PNG, with the
# --vs peer as a second line), px_perf --plot --series of saved CSVs, and
# test/bench/plot.sh, the comparison scripts' helper. Each chart must exist
# and hold the expected series (for SVG, their names in the key and one
# drawn line per series and panel), the axis labels and the machine line;
# bad input is refused with a message. Skips, saying why, without gnuplot.
. "$PX_SRC/test/lib/tap.sh"
B=$PX_BUILD
PXRUN=$B/tools/pxrun/pxrun
PXPERF=$B/tools/px_perf/px_perf
need_built "$PXRUN" "$PXPERF"
REAL=$B/tools/px_perf/.libs/px_perf # the program itself, not libtool's wrapper script
[ -x "$REAL" ] || REAL=$PXPERF
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export LD_LIBRARY_PATH=$B/.libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

printf 'bytes,lat_us,bw_MBps\n8,0.9,9.5\n4096,2.5,1800\n1048576,150,7000\n' >"$T/mpi_peer.csv"
# Without gnuplot (a PATH that has none): a clear error naming the package.
PATH=/nonexistent "$REAL" --plot "$T/none.svg" --series "a=$T/mpi_peer.csv" >"$T/out" 2>"$T/nogp.err"
nogp_rc=$?
check "without gnuplot on PATH: px_perf --plot fails (exit $nogp_rc), draws nothing" \
    test $nogp_rc -eq 1 -a ! -e "$T/none.svg"
check "... saying gnuplot is not on PATH and which package has it" \
    contains "$(cat "$T/nogp.err")" "gnuplot is not on PATH (Debian: apt-get install gnuplot-nox)"
if ! command -v gnuplot >/dev/null; then
    skip "px_perf --plot and test/bench/plot.sh charts" "gnuplot is not installed (Debian gnuplot-nox; scripts/deps.sh installs it)"
    tap_done
fi

# groups FILE: lines drawn in an SVG (gnuplot makes a group per plotted line,
# drawn twice when the key is opaque: count their names)
groups() { grep -o '<g id="gnuplot_plot_[^"]*"' "$1" | sort -u | wc -l; }
# key FILE NAME: NAME is a line's name in the key (gnuplot writes it as text)
key() { grep -qF "<text>$2</text>" "$1" || { echo "# no <text>$2</text> in $1" >&2; return 1; }; }

"$PXRUN" -n 2 "$PXPERF" --sizes 8,4096,1M --iters 20 --vs "$T/mpi_peer.csv" \
    --plot "$T/run.svg" >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "pxrun -n 2 px_perf --plot run.svg: exit 0 (exit $rc)" test $rc -eq 0
[ $rc -eq 0 ] || sed 's/^/# /' "$T/err" | head -5
check "... the table is still printed" test "$(grep -cE '^ +(8|4096|1048576) ' "$T/out")" -eq 3
check "... says where the chart went" contains "$(cat "$T/err")" "px_perf: wrote $T/run.svg"
check "... an SVG file" grep -q '<svg' "$T/run.svg"
check "... its lines: Plexus over shm and the --vs peer, named after its file" \
    eval 'key "$T/run.svg" "plexus shm" && key "$T/run.svg" mpi_peer'
check "... a latency and a bandwidth panel, log-log against size" \
    eval 'key "$T/run.svg" "latency (us)" && key "$T/run.svg" "bandwidth (MB/s)" && key "$T/run.svg" "message size (bytes)"'
check "... 2 lines in each of the 2 panels ($(groups "$T/run.svg") drawn)" test "$(groups "$T/run.svg")" -eq 4
check "... the title names the host, cores and load" \
    grep -qE "<text>$(hostname), [0-9]+ cores, [0-9-]+ [0-9:]+ UTC, load [0-9.]+ [0-9.]+ [0-9.]+</text>" "$T/run.svg"

"$PXRUN" -n 2 "$PXPERF" --sizes 8,65536 --iters 20 --test lat --plot "$T/run.png" \
    >"$T/out" 2>"$T/err" </dev/null
rc=$?
check "px_perf --test lat --plot run.png: exit 0 (exit $rc), a PNG file" \
    eval '[ $rc -eq 0 ] && [ "$(head -c 4 "$T/run.png" | od -An -c | tr -d " ")" = "211PNG" ]'

# Saved results, one line per file: px_perf's CSV, a file without a header
# (mpi_pingpong.c's form), a file whose column is not drawn.
"$PXRUN" -n 2 "$PXPERF" --sizes 8,4096,1M --iters 20 --csv >"$T/px.csv" </dev/null
printf '8 0.8 10\n4096 3.0 1500\n1048576 160 6500\n' >"$T/plain.txt"
"$REAL" --plot "$T/saved.svg" --title "saved runs" --load "0.50 0.40 0.30" \
    --series "run 1=$T/px.csv" --series "$T/plain.txt" >"$T/out" 2>"$T/err"
check "px_perf --plot --series (no run): exit 0 (exit $?)" test -s "$T/saved.svg"
check "... one line per file, named by NAME= or after the file" \
    eval 'key "$T/saved.svg" "run 1" && key "$T/saved.svg" plain && [ "$(groups "$T/saved.svg")" -eq 4 ]'
check "... the title and the load given" \
    eval 'key "$T/saved.svg" "saved runs" && grep -q "load 0.50 0.40 0.30</text>" "$T/saved.svg"'
"$REAL" --plot "$T/lat.svg" --y lat_us --series "a=$T/px.csv" >/dev/null 2>&1
check "... --y lat_us: one panel, one line" eval '[ "$(groups "$T/lat.svg")" -eq 1 ] && ! key "$T/lat.svg" "bandwidth (MB/s)" 2>/dev/null'

# Bad input.
"$REAL" --plot "$T/x.pdf" --series "a=$T/px.csv" >"$T/out" 2>"$T/err"
rc=$?
check "--plot x.pdf: refused (exit $rc), naming the accepted forms" \
    eval '[ $rc -eq 2 ] && grep -q "must end in .svg or .png" "$T/err"'
printf 'bytes,lat_us\n8,1\noops,2\n' >"$T/bad.csv"
"$REAL" --plot "$T/x.svg" --series "a=$T/bad.csv" >"$T/out" 2>"$T/err"
check "a CSV row that is not a number: refused with the file and line" \
    contains "$(cat "$T/err")" "$T/bad.csv:3: 'oops' is not a message size"
"$REAL" --plot "$T/x.svg" --y nosuch --series "a=$T/px.csv" >"$T/out" 2>"$T/err"
check "--y with no such column: refused, listing the columns there are" \
    contains "$(cat "$T/err")" "(the tables' columns: lat_us, bw_MBps)"

# The comparison scripts' helper: Plexus and every peer on one chart; a peer
# that was not measured is left out with a note.
cp "$T/px.csv" "$T/vader_cma.csv"
PX_BUILD=$B PLOT_LOAD="1.25 1.00 0.75" bash "$PX_SRC/test/bench/plot.sh" "$T/cmp.svg" "compare-test" \
    "plexus=$T/px.csv" "vader_cma=$T/vader_cma.csv" "ucx=$T/ucx.csv" >"$T/out" 2>"$T/err"
check "test/bench/plot.sh: exit 0 (exit $?)" test -s "$T/cmp.svg"
check "... Plexus and the peer each a line, in both panels" \
    eval 'key "$T/cmp.svg" plexus && key "$T/cmp.svg" vader_cma && [ "$(groups "$T/cmp.svg")" -eq 4 ]'
check "... the missing peer is named and left out" \
    eval 'grep -q "ucx: no results" "$T/err" && ! key "$T/cmp.svg" ucx 2>/dev/null'
check "... the title, host, cores, date and the load given" \
    grep -qE "<text>$(hostname), [0-9]+ cores, [0-9-]+ [0-9:]+ UTC, load 1.25 1.00 0.75</text>" "$T/cmp.svg"
tap_done
