# components/btl/self: loopback transport; needs nothing, linked into libplexus.
PX_COMPONENT([btl], [self], [static], [], [110])
