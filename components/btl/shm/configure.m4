# components/btl/shm: shared memory between processes of one host, linked into
# libplexus. hwloc is optional: with it, segments are placed on the NUMA node
# of their owner (shm_segment.c tests PX_HAVE_HWLOC).
PX_OPTIONAL([hwloc], [hwloc], [hwloc.h], [hwloc], [hwloc_topology_init],
            [NUMA placement of shm segments])
AS_IF([test "x$px_have_hwloc" = xyes],
  [px_note_btl_shm="hwloc NUMA placement: yes"],
  [px_note_btl_shm="hwloc NUMA placement: no: $px_why_hwloc"])
PX_COMPONENT([btl], [shm], [static], [], [120])
