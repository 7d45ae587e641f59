/*
 * self_component.c: btl/self's variables, open (constructs the three
 * fragment free lists), init (sizes and fills them, returns the module) and
 * close.
 */
#include <stdlib.h>
#include <string.h>
#include "components/btl/self/self.h"
#include "core/mca/var.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "frameworks/btl/base/base.h"

px_btl_self_state_t px_btl_self_state = {
    .free_list_num = 0,
    .free_list_max = 64,
    .free_list_inc = 8,
};

#define PX_BTL_SELF_COUNT(field, text, lo, hi)                                                     \
    {                                                                                              \
        .name = #field, .help = text, .type = PX_MCA_VAR_TYPE_INT, .info_level = 5,                \
        .scope = PX_MCA_VAR_SCOPE_LOCAL, .min = lo, .max = hi,                                     \
        .offset = PX_MCA_VAR_AT(px_btl_self_state_t, field)                                        \
    }
static const px_mca_var_field_t px_btl_self_vars[] = {
    PX_BTL_SELF_COUNT(free_list_num, "Fragments allocated in each free list at init", "0", "65536"),
    PX_BTL_SELF_COUNT(free_list_max, "Most fragments each free list may hold (-1 or 0: unlimited)",
                      "-1", "1048576"),
    PX_BTL_SELF_COUNT(free_list_inc, "Fragments added each time a free list grows", "1", "65536"),
    {.name = NULL},
};
#undef PX_BTL_SELF_COUNT

static int px_btl_self_register(void)
{
    /* A refused value was reported and its default kept: go on. */
    int first = px_mca_var_register_table("btl", "self", px_btl_self_vars, -1, &px_btl_self_state);
    if (first < 0 && first != PX_ERR_BAD_PARAM)
        return first;
    /* Smaller eager fragments than the inline ones make no sense. */
    px_btl_base_module_param_range(&px_btl_self_component, "eager_limit", "128", "64M");
    int rc = px_btl_base_register_module_params(&px_btl_self_component, &px_btl_self_module.super);
    return rc < 0 ? rc : first;
}

static int px_btl_self_open(void)
{
    px_btl_self_state_t *s = &px_btl_self_state;
    PX_OBJ_CONSTRUCT(&s->frags_inline, px_free_list_t);
    PX_OBJ_CONSTRUCT(&s->frags_eager, px_free_list_t);
    PX_OBJ_CONSTRUCT(&s->frags_send, px_free_list_t);
    s->lists_constructed = true;
    s->lists_initialized = false;
    return PX_SUCCESS;
}

static int px_btl_self_close(void)
{
    px_btl_self_state_t *s = &px_btl_self_state;
    if (s->lists_constructed) {
        PX_OBJ_DESTRUCT(&s->frags_send);
        PX_OBJ_DESTRUCT(&s->frags_eager);
        PX_OBJ_DESTRUCT(&s->frags_inline);
        s->lists_constructed = false;
        s->lists_initialized = false;
    }
    return PX_SUCCESS;
}

typedef struct {
    px_free_list_t *list;
    size_t capacity;
    bool inline_data;
} frag_init_ctx_t;

static int px_btl_self_frag_init(px_free_list_item_t *item, void *ctx)
{
    const frag_init_ctx_t *c = ctx;
    px_btl_self_frag_t *f = (px_btl_self_frag_t *)item;
    f->list = c->list;
    f->capacity = c->capacity;
    f->data = c->inline_data ? (unsigned char *)(f + 1) : item->payload;
    return NULL == f->data ? PX_ERR_OUT_OF_RESOURCE : PX_SUCCESS;
}

static frag_init_ctx_t px_btl_self_ctx[3];

int px_btl_self_frag_lists_init(void)
{
    px_btl_self_state_t *s = &px_btl_self_state;
    px_btl_module_t *m = &px_btl_self_module.super;
    if (m->btl_eager_limit < PX_BTL_SELF_MAX_INLINE_SIZE)
        m->btl_eager_limit = PX_BTL_SELF_MAX_INLINE_SIZE;
    if (m->btl_max_send_size < m->btl_eager_limit)
        m->btl_max_send_size = m->btl_eager_limit;
    size_t num = s->free_list_num > 0 ? (size_t)s->free_list_num : 0;
    size_t max = s->free_list_max > 0 ? (size_t)s->free_list_max : 0;
    size_t inc = s->free_list_inc > 0 ? (size_t)s->free_list_inc : 8;
    struct {
        px_free_list_t *list;
        size_t capacity;
        bool inline_data;
    } l[3] = {
        {&s->frags_inline, PX_BTL_SELF_MAX_INLINE_SIZE, true},
        {&s->frags_eager, m->btl_eager_limit, false},
        {&s->frags_send, m->btl_max_send_size, false},
    };
    for (int i = 0; i < 3; ++i) {
        px_btl_self_ctx[i] = (frag_init_ctx_t){l[i].list, l[i].capacity, l[i].inline_data};
        px_free_list_params_t p = {
            .item_class = PX_CLASS(px_btl_self_frag_t),
            .item_size =
                sizeof(px_btl_self_frag_t) + (l[i].inline_data ? PX_BTL_SELF_MAX_INLINE_SIZE : 0),
            .payload_size = l[i].inline_data ? 0 : l[i].capacity,
            .num_initial = num,
            .num_max = max,
            .num_per_grow = inc,
            .item_init = px_btl_self_frag_init,
            .item_init_ctx = &px_btl_self_ctx[i],
            .thread_safe = false,
        };
        int rc = px_free_list_init(l[i].list, &p);
        if (rc != PX_SUCCESS)
            return rc;
    }
    s->lists_initialized = true;
    return PX_SUCCESS;
}

static px_btl_module_t **px_btl_self_init(int *num_modules, bool enable_progress_threads)
{
    (void)enable_progress_threads;
    *num_modules = 0;
    if (!px_btl_self_state.lists_constructed)
        px_btl_self_open();
    if (PX_SUCCESS != px_btl_self_frag_lists_init()) {
        px_show_warning("btl self: could not allocate its fragment free lists "
                        "(btl_self_free_list_num %d, btl_self_eager_limit %zu, "
                        "btl_self_max_send_size %zu)",
                        px_btl_self_state.free_list_num, px_btl_self_module.super.btl_eager_limit,
                        px_btl_self_module.super.btl_max_send_size);
        return NULL;
    }
    px_btl_module_t **mods = malloc(sizeof(*mods));
    if (NULL == mods)
        return NULL;
    px_btl_self_module.rank = -1;
    px_btl_self_module.error_cb = NULL;
    mods[0] = &px_btl_self_module.super;
    *num_modules = 1;
    return mods;
}

const px_btl_component_t px_btl_self_component = {
    .base = PX_BTL_COMPONENT_HEADER("self", 1, 0, 0, px_btl_self_register, px_btl_self_open,
                                    px_btl_self_close),
    .btl_init = px_btl_self_init,
    .btl_modex_send = NULL,
    /* Not thread-safe: its fragments come from a free list without locks
     * (thread_safe = false) and a send runs the receiver's callback at once;
     * the base serializes it at PX_THREAD_MULTIPLE (docs/threads.md). */
    .btl_thread_support = PX_BTL_THREADS_SERIALIZED,
};
