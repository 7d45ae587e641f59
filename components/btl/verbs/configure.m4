# components/btl/verbs: InfiniBand/RoCE through libibverbs; a plugin, so a
# machine without libibverbs still runs the rest. hwloc is optional: with it,
# of several devices only those nearest the process's binding are used
# (verbs_component.c tests PX_HAVE_HWLOC). Checked here, not taken from
# another fragment (PX_OPTIONAL checks a library once however many ask).
PX_OPTIONAL([verbs], [libibverbs], [infiniband/verbs.h], [ibverbs], [ibv_get_device_list],
            [btl/verbs (InfiniBand, RoCE)])
PX_OPTIONAL([hwloc], [hwloc], [hwloc.h], [hwloc], [hwloc_topology_init],
            [NUMA placement of shm segments, nearest RDMA device of btl/verbs])
AS_IF([test "x$px_have_hwloc" = xyes],
  [px_note_btl_verbs="hwloc device locality: yes"],
  [px_note_btl_verbs="hwloc device locality: no: $px_why_hwloc"])
PX_COMPONENT([btl], [verbs], [plugin], [verbs], [130])
