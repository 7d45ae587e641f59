/*
 * name.h: the names layer (runtime/plexus_name.h) inside the library: the
 * entry format (entry.c) and the calls px_init/px_finalize make (name.c).
 * The layer sits above messaging and the transfer engine (docs/architecture.md,
 * "The runtime's sub-layers"); the transfer engine knows it only through the
 * hook it registers (px_xfer_set_free_hook).
 */
#ifndef PX_RT_NAME_H
#define PX_RT_NAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "runtime/plexus_name.h"
#include "runtime/plexus_xfer.h"

/* The entry format's version this Plexus writes, and the newest it reads.
 * A reader reads every version from 1 to PX_NAME_ENTRY_VERSION (fields it
 * does not know are ignored); a newer one is refused, naming it. */
#define PX_NAME_ENTRY_VERSION 1
/* Longest contact string and host name an entry may carry. */
#define PX_NAME_CONTACT_MAX 1024
#define PX_NAME_HOST_MAX    256

/* A decoded entry. */
typedef struct px_name_entry {
    int version;
    int kind; /* PX_NAME_REGION or PX_NAME_CONTACT */
    char contact[PX_NAME_CONTACT_MAX];
    unsigned char key[PX_XFER_KEY_MAX];
    size_t keylen; /* 0 for a contact */
    uint64_t length;
    char host[PX_NAME_HOST_MAX];
    long pid;
    uint64_t owner; /* the publishing process's random instance id */
} px_name_entry_t;

/* Whether entries can be written and read (built with json-c). */
bool px_name_entry_supported(void);
/* Write `e` as JSON into a malloc'd NUL-terminated string (*out, *len
 * without the NUL). */
int px_name_entry_encode(const px_name_entry_t *e, char **out, size_t *len);
/* Read an entry from `len` untrusted bytes. PX_SUCCESS; PX_ERR_BAD_PARAM
 * (not a Plexus entry: malformed, oversized, a field of the wrong type or
 * size) or PX_ERR_VERSION (a newer entry format), with the reason in
 * why[0..cap). */
int px_name_entry_decode(const void *buf, size_t len, px_name_entry_t *e, char *why, size_t cap);

/* Base64 (RFC 4648, with padding): the encoded length of n bytes, encoding
 * into out (room for that plus a NUL), and strict decoding (-1: not
 * base64, or longer than cap). */
size_t px_name_b64_len(size_t n);
void px_name_b64_encode(const unsigned char *in, size_t n, char *out);
long px_name_b64_decode(const char *in, size_t n, unsigned char *out, size_t cap);

/* NULL when `name` follows the rules of plexus_name.h (with at most `max`
 * bytes), else what is wrong. */
const char *px_name_problem(const char *name, size_t max);

/* px_init registers the layer's hook; px_finalize unpublishes this
 * process's names (within registry_timeout), stops the heartbeat thread,
 * frees what is left and closes the registry framework. */
void px_name_init(void);
void px_name_finalize(void);

#endif
