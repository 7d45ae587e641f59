# components/registry/p2p: the registry without a service (each process answers
# lookups of its own names); needs nothing, linked into libplexus.
PX_COMPONENT([registry], [p2p], [static], [], [410])
