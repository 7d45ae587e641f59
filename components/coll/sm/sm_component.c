/*
 * sm_component.c: registration and query of coll/sm.
 */
#include "components/coll/sm/sm.h"
#include "core/mca/var.h"
#include "core/util/error.h"

int px_coll_sm_priority = 15;
size_t px_coll_sm_chunk = 1024 * 1024;
int px_coll_sm_slots = 8;
size_t px_coll_sm_step = 256 * 1024;
int px_coll_sm_single_copy = PX_COLL_SM_SC_AUTO;
size_t px_coll_sm_nt_min = 2 * 1024 * 1024;
size_t px_coll_sm_single_copy_min = 4 * 1024 * 1024;
size_t px_coll_sm_single_copy_red_min = (size_t)1 << 30;

static const px_mca_var_enum_value_t px_coll_sm_sc_values[] = {
    {PX_COLL_SM_SC_NONE, "none"},
    {PX_COLL_SM_SC_AUTO, "auto"},
    {0, NULL},
};

static const px_mca_var_field_t px_coll_sm_vars[] = {
    PX_COLL_PRIORITY_VAR("sm", px_coll_sm_priority),
    {.name = "chunk",
     .help = "Bytes of a coll/sm pipeline step: a member copies this much into its shared "
             "segment while the others copy the step before out (sized so a few steps stay in "
             "the cache the cores share)",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "1M",
     .min = "4k",
     .max = "64M",
     .storage = &px_coll_sm_chunk},
    {.name = "slots",
     .help = "Steps of coll/sm's pipeline a member may run ahead of the slowest reader (its "
             "shared segment holds this many chunks)",
     .type = PX_MCA_VAR_TYPE_INT,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .min = "2",
     .max = "256",
     .storage = &px_coll_sm_slots},
    {.name = "single_copy",
     .help = "auto: when the transport reads and writes every member's memory directly "
             "(btl/shm's process_vm_readv/writev), each byte moves once, from the member that "
             "has it into the member that needs it, in coll_sm_step steps either of the two "
             "takes; none: through the shared segments (a copy in, a copy out); the same on every "
             "rank",
     .type = PX_MCA_VAR_TYPE_ENUM,
     .enum_values = px_coll_sm_sc_values,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .storage = &px_coll_sm_single_copy},
    {.name = "single_copy_min",
     .help = "Bytes (a call's message size, as the decision rules count it) from which a call "
             "goes by single copy when coll_sm_single_copy allows it; smaller calls go through "
             "the shared segments, both members copying at once (on the development VM a "
             "process_vm_readv cost 4-8x a memcpy of the same bytes); 0: single copy for every "
             "call; the group uses its rank 0's value",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "4M",
     .min = "0",
     .storage = &px_coll_sm_single_copy_min},
    {.name = "single_copy_red_min",
     .help = "coll_sm_single_copy_min for allreduce and reduce_scatter, whose single copy reads "
             "the others' inputs with process_vm_readv where the streams reduce straight out of "
             "the shared segments (they were faster at every size measured, 64 KiB-16 MiB); the "
             "group uses its rank 0's value",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "1G",
     .min = "0",
     .storage = &px_coll_sm_single_copy_red_min},
    {.name = "step",
     .help = "Bytes of a coll/sm single-copy step (what a member claims of a transfer, and the "
             "reduction buffer); a transfer of up to 2 steps moves in halves of at least 16 KiB; a "
             "member "
             "takes several steps in one call (the receiver all that are left, or half of them "
             "from a bcast's root); the same on every rank",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "256k",
     .min = "4k",
     .max = "64M",
     .storage = &px_coll_sm_step},
    {.name = "nt_min",
     .help = "Bytes from which coll/sm copies a block into a user's result buffer by its own "
             "code with non-temporal (streaming) stores, which skip the cache: a member's own "
             "block of an allgather or alltoall, and the streams' copies out; 0: never (memcpy "
             "throughout); may differ between ranks",
     .type = PX_MCA_VAR_TYPE_SIZE,
     .info_level = 5,
     .scope = PX_MCA_VAR_SCOPE_READONLY,
     .dflt = "2M",
     .min = "0",
     .storage = &px_coll_sm_nt_min},
    {.name = NULL},
};

static int px_coll_sm_register(void)
{
    return px_mca_var_register_table("coll", "sm", px_coll_sm_vars, -1, NULL);
}

const px_coll_component_t px_coll_sm_component = {
    .base = PX_COLL_COMPONENT_HEADER("sm", 1, 0, 0, px_coll_sm_register, NULL, NULL),
    .query = px_coll_sm_query_group,
};
