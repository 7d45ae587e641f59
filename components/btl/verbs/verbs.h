/*
 * verbs.h: btl/verbs, the BTL over libibverbs (InfiniBand, RoCE, iWARP).
 * Internal to the component (verbs_component.c: variables, device discovery,
 * init; verbs_module.c: the module).
 *
 * State of this component: discovery is complete (devices, ports, their
 * state and link layer, shown by px_info as btl_verbs_devices_found); the
 * data path over RC queue pairs is not written yet, so init always declines,
 * saying why: "no RDMA device found" on a machine without one, otherwise
 * that the data path is missing and that btl/ofi serves the same devices
 * through libfabric's verbs;ofi_rxm provider. See docs/ofi.md.
 */
#ifndef PX_BTL_VERBS_H
#define PX_BTL_VERBS_H

#include "frameworks/btl/btl.h"

extern const px_btl_component_t px_btl_verbs_component;

/* Variables. */
extern char *px_btl_verbs_device_include; /* devices to use, e.g. "mlx5_0,mlx5_1" */
extern int px_btl_verbs_verbose;

/* Fill `out` with a description of the devices found ("none" when there
 * are none); returns the number of usable (active-port) devices. */
int px_btl_verbs_discover(char *out, size_t len);

/* Why init declined (valid after init returned no module). */
extern char px_btl_verbs_decline_reason[1400];

/* The module template whose figures are registered as btl_verbs_*. */
extern px_btl_module_t px_btl_verbs_module_template;

#endif
