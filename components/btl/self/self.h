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

typedef struct px_btl_self_module {
    px_btl_module_t super;
    int rank; /* the calling process */
    px_btl_error_fn error_cb;
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
