# components/btl/ofi: libfabric RDM endpoints; a plugin, so a machine without
# libfabric still runs the rest. The plugin dlopen()s libfabric itself, but
# configure still needs its headers and a library to link the check against.
PX_OPTIONAL([ofi], [libfabric], [rdma/fabric.h], [fabric], [fi_getinfo], [btl/ofi (libfabric)])
PX_COMPONENT([btl], [ofi], [plugin], [ofi], [140])
