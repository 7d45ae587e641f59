/*
 * key.c: the wire form of a transfer key, and px_xfer_key_export (the
 * import is remote.c).
 * Little-endian, no padding, self-describing:
 *
 *   0  u32 magic "PXK1"     4 u16 version         6 u16 entries
 *   8  u32 total bytes     12 u32 flags           16 u64 checksum
 *   24 u64 job hash        32 i32 owner rank      36 u32 zero
 *   40 u64 region id       48 u64 data address    56 u64 length
 *   64 entries: u32 component id (hash of its name), u16 which module of
 *      that component, u8 kind (1 mapping description, 2 registration
 *      handle, 3 validity word: u32 slot then the table's mapping
 *      description), u8 zero, u32 length, then that many bytes.
 *
 * The checksum is FNV-1a 64 over the whole key with the checksum field
 * zeroed. The parser is a pure function of the bytes (test/fuzz/fuzz_xfer_key.c
 * feeds it), checking everything it reads before it reads it.
 */
#include <stdio.h>
#include <string.h>
#include "core/util/error.h"
#include "runtime/xfer/xfer.h"

#define XFER_READY(fn)                                                                             \
    do {                                                                                           \
        if (PX_UNLIKELY(!px_xfer.ready))                                                           \
            return px_xfer_api_error(PX_ERR_NOT_INITIALIZED, fn,                                   \
                                     "Plexus is not initialised (px_init)");                       \
    } while (0)

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME  1099511628211ULL

uint64_t px_xfer_hash64(const void *data, size_t len, uint64_t h)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; ++i)
        h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

uint32_t px_xfer_name_id(const char *name)
{
    uint64_t h = px_xfer_hash64(name, strlen(name), FNV_OFFSET);
    uint32_t id = (uint32_t)(h ^ (h >> 32));
    return id ? id : 1;
}

static void put16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
}
static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}
static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; ++i)
        p[i] = (unsigned char)(v >> (8 * i));
}
static uint16_t get16(const unsigned char *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}
static uint32_t get32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}
static uint64_t get64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; --i)
        v = (v << 8) | p[i];
    return v;
}

static uint64_t key_checksum(const unsigned char *p, size_t len)
{
    static const unsigned char zero[8];
    uint64_t h = px_xfer_hash64(p, 16, FNV_OFFSET);
    h = px_xfer_hash64(zero, 8, h);
    return px_xfer_hash64(p + 24, len - 24, h);
}

size_t px_xfer_key_write(const px_xfer_key_t *k, void *buf, size_t cap)
{
    size_t need = PX_XFER_KEY_HDR;
    for (int i = 0; i < k->nentries; ++i)
        need += PX_XFER_KEY_ENTRY + k->entries[i].len;
    if (need > cap || NULL == buf)
        return need;
    unsigned char *p = buf;
    memset(p, 0, PX_XFER_KEY_HDR);
    put32(p + 0, PX_XFER_KEY_MAGIC);
    put16(p + 4, PX_XFER_KEY_VERSION);
    put16(p + 6, (uint16_t)k->nentries);
    put32(p + 8, (uint32_t)need);
    put32(p + 12, k->flags);
    put64(p + 24, k->job_hash);
    put32(p + 32, (uint32_t)k->owner);
    put64(p + 40, k->region_id);
    put64(p + 48, k->addr);
    put64(p + 56, k->length);
    size_t pos = PX_XFER_KEY_HDR;
    for (int i = 0; i < k->nentries; ++i) {
        const px_xfer_key_entry_t *e = &k->entries[i];
        put32(p + pos, e->comp_id);
        put16(p + pos + 4, e->comp_index);
        p[pos + 6] = e->kind;
        p[pos + 7] = 0;
        put32(p + pos + 8, e->len);
        pos += PX_XFER_KEY_ENTRY;
        if (e->len)
            memcpy(p + pos, e->data, e->len);
        pos += e->len;
    }
    put64(p + 16, key_checksum(p, need));
    return need;
}

int px_xfer_key_parse(const void *key, size_t len, px_xfer_key_t *out, char *why, size_t whylen)
{
    const unsigned char *p = key;
#define KEY_BAD(...)                                                                               \
    do {                                                                                           \
        snprintf(why, whylen, __VA_ARGS__);                                                        \
        return PX_ERR_BAD_PARAM;                                                                   \
    } while (0)
    if (NULL == p || len < 8)
        KEY_BAD("%zu bytes is not a transfer key (truncated: a key has at least %d bytes)", len,
                PX_XFER_KEY_HDR);
    if (get32(p) != PX_XFER_KEY_MAGIC)
        KEY_BAD("not a Plexus transfer key (it does not start with \"PXK1\")");
    if (get16(p + 4) != PX_XFER_KEY_VERSION)
        KEY_BAD("key version %u, this library reads version %d", get16(p + 4), PX_XFER_KEY_VERSION);
    if (len < PX_XFER_KEY_HDR)
        KEY_BAD("truncated: %zu bytes, less than the %d-byte header", len, PX_XFER_KEY_HDR);
    uint32_t total = get32(p + 8);
    if (total > len)
        KEY_BAD("truncated: %zu bytes, the key says it has %u", len, total);
    if (total < len)
        KEY_BAD("%zu bytes, the key says it has %u (bytes after its end)", len, total);
    if (get64(p + 16) != key_checksum(p, len))
        KEY_BAD("corrupt: its checksum does not match its contents");
    if (get32(p + 36) != 0)
        KEY_BAD("its reserved header bytes are not zero (not a key this library wrote)");
    int n = get16(p + 6);
    if (n > PX_XFER_KEY_ENTRIES)
        KEY_BAD("%d entries, at most %d are read", n, PX_XFER_KEY_ENTRIES);
    memset(out, 0, sizeof *out);
    out->flags = get32(p + 12);
    out->job_hash = get64(p + 24);
    out->owner = (int32_t)get32(p + 32);
    out->region_id = get64(p + 40);
    out->addr = get64(p + 48);
    out->length = get64(p + 56);
    if (0 == out->region_id)
        KEY_BAD("region id 0 (no region has it)");
    if (out->addr + out->length < out->addr)
        KEY_BAD("a region of %llu bytes at 0x%llx does not fit an address space",
                (unsigned long long)out->length, (unsigned long long)out->addr);
    size_t pos = PX_XFER_KEY_HDR;
    for (int i = 0; i < n; ++i) {
        if (len - pos < PX_XFER_KEY_ENTRY)
            KEY_BAD("entry %d of %d is cut short", i, n);
        px_xfer_key_entry_t *e = &out->entries[i];
        e->comp_id = get32(p + pos);
        e->comp_index = get16(p + pos + 4);
        e->kind = p[pos + 6];
        e->len = get32(p + pos + 8);
        if (p[pos + 7] != 0)
            KEY_BAD("entry %d: its reserved byte is not zero", i);
        pos += PX_XFER_KEY_ENTRY;
        if (e->kind < PX_XFER_ENTRY_MAP || e->kind > PX_XFER_ENTRY_VALID)
            KEY_BAD("entry %d has kind %u (1 mapping, 2 registration, 3 validity)", i, e->kind);
        size_t max = PX_XFER_ENTRY_RDMA == e->kind  ? PX_XFER_MAX_HANDLE
                     : PX_XFER_ENTRY_MAP == e->kind ? PX_BTL_MEM_DESC_MAX
                                                    : 4 + PX_BTL_MEM_DESC_MAX;
        if (e->len > max)
            KEY_BAD("entry %d holds %u bytes, at most %zu", i, e->len, max);
        if (e->len > len - pos)
            KEY_BAD("entry %d runs past the end of the key", i);
        e->data = p + pos;
        pos += e->len;
    }
    if (pos != len)
        KEY_BAD("%zu bytes after the last entry", len - pos);
    out->nentries = n;
    return PX_SUCCESS;
#undef KEY_BAD
}

/* ------------------------------------------------------------ export */

int px_xfer_key_export(const px_xfer_region_t *region, void *key, size_t capacity, size_t *length)
{
    XFER_READY("px_xfer_key_export");
    if (!px_xfer_region_ok(region) || !length)
        return px_xfer_api_error(
            PX_ERR_BAD_PARAM, "px_xfer_key_export",
            "region %p, length %p: expected a region and a place for the length",
            (const void *)region, (void *)length);
    atomic_store(&((px_xfer_region_t *)region)->exported, true); /* px_xfer_free revokes it */
    px_xfer_key_t k;
    memset(&k, 0, sizeof k);
    k.job_hash = px_xfer.job_hash;
    k.owner = px_rt.rank;
    k.flags = region->allocated ? 1 : 0;
    k.region_id = region->id;
    k.addr = (uint64_t)(uintptr_t)region->base;
    k.length = region->len;
    if (region->mem_mod >= 0) {
        const px_xfer_mod_t *m = &px_xfer.mods[region->mem_mod];
        k.entries[k.nentries++] = (px_xfer_key_entry_t){
            m->comp_id, m->comp_index, PX_XFER_ENTRY_MAP, region->mem.desc_len, region->mem.desc};
    }
    unsigned char valid[4 + PX_BTL_MEM_DESC_MAX];
    if (region->vslot >= 0) {
        /* Shared table: the transport and its description; private: none
         * (component id 0), for this process's own imports. */
        const px_xfer_mod_t *m = px_xfer.vtab_mod >= 0 ? &px_xfer.mods[px_xfer.vtab_mod] : NULL;
        uint32_t slot = (uint32_t)region->vslot, dlen = m ? px_xfer.vtab.desc_len : 0;
        memcpy(valid, &slot, 4);
        if (dlen)
            memcpy(valid + 4, px_xfer.vtab.desc, dlen);
        k.entries[k.nentries++] = (px_xfer_key_entry_t){m ? m->comp_id : 0, m ? m->comp_index : 0,
                                                        PX_XFER_ENTRY_VALID, 4 + dlen, valid};
    }
    for (int i = 0; i < px_xfer.nmods && k.nentries < PX_XFER_KEY_ENTRIES; ++i) {
        const px_xfer_mod_t *m = &px_xfer.mods[i];
        if (!(m->put || m->get) || (m->reg && !region->reg[i]))
            continue;
        k.entries[k.nentries++] = (px_xfer_key_entry_t){
            m->comp_id, m->comp_index, PX_XFER_ENTRY_RDMA, m->reg ? m->hsize : 0,
            m->reg ? (const unsigned char *)region->reg[i] : NULL};
    }
    size_t need = px_xfer_key_write(&k, NULL, 0);
    *length = need;
    if (need > capacity || !key)
        return px_xfer_fail(PX_ERR_TRUNCATE,
                            "px_xfer_key_export: the key has %zu bytes, the buffer %zu", need,
                            capacity);
    px_xfer_key_write(&k, key, capacity);
    return PX_SUCCESS;
}
