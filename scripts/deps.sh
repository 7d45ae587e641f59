#!/usr/bin/env bash
# Install everything Plexus needs to build, test and benchmark on Debian 12.
# Run as root (or with sudo). Safe to run again.
set -euo pipefail
pkgs=(
  # build
  build-essential autoconf automake libtool libltdl-dev pkg-config check git
  # optional transports and topology
  libhwloc-dev libibverbs-dev libfabric-dev libfabric-bin libpmix-dev
  # authentication of peers that connect after start (runtime/peer, HMAC-SHA256)
  libsodium-dev
  # entries of named segments in a registry (runtime/name, JSON)
  libjson-c-dev
  # tests: verbs clients run on the software libibverbs (test/softverbs)
  ibverbs-utils perftest
  # peers for benchmarks and the multi-host test launcher
  openmpi-bin libopenmpi-dev ucx-utils libucx-dev
  # tests: a Slurm cluster made by test/multihost/t_slurm.sh (srun --mpi=pmix:
  # mpi_pmix_v4.so is in slurm-wlm-basic-plugins; it loads libpmix-dev's libpmix.so)
  slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge
  # tests: namespaces, process tools, sanitizers
  iproute2 procps psmisc util-linux strace hyperfine clang libclang-rt-14-dev clang-format
  # tests: libplexus.so's ABI against the committed baseline (test/abi/t_abi_baseline.sh)
  abigail-tools
  # tests: reading px_info --json (test/runtime/t_var_ranges.sh)
  python3
  # charts of px_perf --plot and test/bench/plot.sh (test/tools/t_px_perf_plot.sh)
  gnuplot-nox
  # man pages of the tools, made from their --help at build time
  help2man
)
SUDO=
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; fi
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  $SUDO apt-get update -q
  $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
echo "deps.sh: all packages present"
