# components/boot/pxrun: the client of pxrun's key-value service; needs nothing,
# linked into libplexus.
PX_COMPONENT([boot], [pxrun], [static], [], [220])
