# components/boot/singleton: a process with no launcher; needs nothing, linked into libplexus.
PX_COMPONENT([boot], [singleton], [static], [], [210])
