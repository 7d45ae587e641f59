# components/btl/verbs: InfiniBand/RoCE through libibverbs; a plugin, so a
# machine without libibverbs still runs the rest.
PX_OPTIONAL([verbs], [libibverbs], [infiniband/verbs.h], [ibverbs], [ibv_get_device_list],
            [btl/verbs (InfiniBand, RoCE)])
PX_COMPONENT([btl], [verbs], [plugin], [verbs], [130])
