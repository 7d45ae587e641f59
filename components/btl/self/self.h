/*
 * self.h: btl/self, the loopback transport: a process sending to itself.
 * The receiver's active-message callback runs inside btl_send, so a send
 * completes before it returns; put/get are memcpy. Fragments come from three
 * free lists: inline (header-sized, with the payload referenced in place),
 * eager (btl_self_eager_limit bytes) and send (btl_self_max_send_size bytes).
 */
#ifndef PX_BTL_SELF_H
#define PX_BTL_SELF_H

#include "frameworks/btl/btl.h"

/* Bytes of inline storage: headers of prepare_src's zero-copy descriptors and
 * small btl_alloc requests. */
#define PX_BTL_SELF_MAX_INLINE_SIZE 128

typedef struct px_btl_self_frag {
    px_btl_descriptor_t base;
    px_btl_segment_t segments[2];
    unsigned char *data; /* inline storage or the free list payload */
    size_t capacity;     /* bytes at data */
    px_free_list_t *list;
} px_btl_self_frag_t;
PX_CLASS_DECLARATION(px_btl_self_frag_t);

/* A dynamic peer of btl/self (BTL API 3.3): the process connected to itself
 * through the dynamic peer exchange. Each side of the connection has one;
 * a send on one is received on the other (its `peer`). The endpoint of the
 * job's own rank is the module itself, never one of these. */
typedef struct px_btl_self_dyn {
    uint64_t magic; /* PX_BTL_SELF_DYN_MAGIC while it lives */
    uint64_t id;    /* named on the wire, never a pointer */
    struct px_btl_self_dyn *peer, *next, *prev;
} px_btl_self_dyn_t;
#define PX_BTL_SELF_DYN_MAGIC 0x73656c6664796e31ULL /* "selfdyn1" */

/* btl/self's part of a dynamic peer payload: who may accept it. */
typedef struct px_btl_self_dyn_part {
    uint32_t magic; /* PX_BTL_SELF_PART_MAGIC */
    uint32_t pid;   /* the process, for the message */
    uint64_t nonce; /* random per process: the same pid in another namespace differs */
    uint64_t id;    /* the px_btl_self_dyn_t it names */
} px_btl_self_dyn_part_t;
#define PX_BTL_SELF_PART_MAGIC 0x666c6573u /* "self" */

typedef struct px_btl_self_module {
    px_btl_module_t super;
    int rank; /* the calling process */
    px_btl_error_fn error_cb;
    /* dynamic peers (3.3) */
    px_btl_self_dyn_t *dyn_head;
    uint64_t dyn_next_id, dyn_nonce;
    size_t dyn_count;
} px_btl_self_module_t;

typedef struct px_btl_self_state {
    int free_list_num, free_list_max, free_list_inc;
    px_free_list_t frags_inline, frags_eager, frags_send;
    bool lists_constructed, lists_initialized;
} px_btl_self_state_t;

extern const px_btl_component_t px_btl_self_component;
extern px_btl_self_state_t px_btl_self_state;
/* The module template: figures are registered as variables on it. */
extern px_btl_self_module_t px_btl_self_module;

int px_btl_self_frag_lists_init(void);

#endif
