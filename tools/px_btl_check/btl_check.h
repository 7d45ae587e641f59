/*
 * btl_check.h: px_btl_check's shared state. The launcher (px_btl_check.c)
 * starts jobs under pxrun that run this same program as a worker
 * (--worker JOB); each rank of a job runs the checks of that job from the
 * table (btl_check_table.c) in order and prints one report line per check
 * on stdout, which the launcher merges into TAP. A check is one function
 * returning BC_OK, BC_FAIL (with a reason) or BC_SKIP (with why).
 */
#ifndef PX_BTL_CHECK_H
#define PX_BTL_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "frameworks/btl/btl.h"

/* The jobs: module checks (the module itself, beside self and shm), the
 * messaging layer with only the transport and self, a peer that dies. */
enum { BC_JOB_MODULE = 0, BC_JOB_PROTO = 1, BC_JOB_DEATH = 2, BC_NJOBS = 3 };
enum { BC_OK = 0, BC_FAIL = 1, BC_SKIP = 2 };

/* What a report line starts with (the rest: "<check> <rank> ok|fail|skip <reason>"
 * or "fatal <rank> <reason>"). */
#define BC_REPORT "@@px_btl_check "
#define BC_REASON 1024

typedef struct bc_ctx {
    const char *name; /* the component under test */
    px_btl_module_t *m;
    int rank, size;
    int to, from;           /* ring partners: to = rank+1, from = rank-1 (self when 1 rank) */
    px_btl_endpoint_t **ep; /* [size]: the module's endpoint for each rank, NULL when not reached */
    const char **why_not;   /* [size]: its reason for a rank it does not reach */
    double timeout;         /* seconds any one wait may take */
    char reason[BC_REASON]; /* the current check's reason */
} bc_ctx_t;

typedef struct bc_check {
    int job;
    const char *name;
    int (*run)(bc_ctx_t *c);
} bc_check_t;

extern const bc_check_t bc_checks[];
extern const int bc_nchecks;

/* btl_check_util.c */
int bc_fail(bc_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int bc_skip(bc_ctx_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double bc_now(void);
void bc_progress(bc_ctx_t *c);
/* The byte at `offset` of message `k` from rank `src` in check `tag`. */
static inline unsigned char bc_pattern(int tag, int src, unsigned long k, size_t offset)
{
    return (unsigned char)(offset * 7u + k * 13u + (unsigned)src * 31u + (unsigned)tag * 5u + 1u);
}
void bc_fill(unsigned char *p, size_t len, size_t from, int tag, int src, unsigned long k);
/* Received messages: the current tag's handler sees every arrival, with the
 * data gathered into one buffer. */
typedef void (*bc_rx_fn)(bc_ctx_t *c, int src, unsigned long k, const unsigned char *data,
                         size_t len);
void bc_rx_begin(bc_ctx_t *c, int tag, bc_rx_fn fn);
void bc_rx_end(void);
unsigned long bc_rx_count(int src);
/* The first error any arrival noted ("" when none), and noting one. */
const char *bc_rx_error(void);
void bc_rx_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Progress until `n` messages from `src` arrived, or the timeout (then false). */
bool bc_rx_wait(bc_ctx_t *c, int src, unsigned long n);
/* The receive checker most checks use: message k from src has sizes[k] bytes
 * of bc_pattern (reserve > 0: that many header bytes first, pattern too). */
void bc_rx_expect_sizes(const size_t *sizes, size_t nsizes);
void bc_rx_sized(bc_ctx_t *c, int src, unsigned long k, const unsigned char *data, size_t len);

/* Sends with completion counting. */
typedef struct bc_sent {
    int callbacks;  /* completion callbacks seen */
    int status;     /* the last callback's status */
    bool wrong_des; /* a callback named another descriptor */
    px_btl_descriptor_t *des;
} bc_sent_t;
void bc_send_cb(px_btl_module_t *m, px_btl_endpoint_t *ep, px_btl_descriptor_t *des, int status);
/* alloc + fill + send `len` bytes of message k with ownership to the BTL;
 * retries while out of resources. BC_OK or BC_FAIL with the reason set. */
int bc_send_alloc(bc_ctx_t *c, int dest, int tag, unsigned long k, size_t len);
/* prepare_src of all of `conv`, in as many fragments as the module takes;
 * each starts with a bc_frag_hdr_t (the reserve) saying where its data goes.
 * *nfrags counts the fragments. */
typedef struct bc_frag_hdr {
    uint64_t offset, total;
} bc_frag_hdr_t;
int bc_send_prepared(bc_ctx_t *c, int dest, int tag, px_btl_convertor_t *conv, size_t *nfrags);
/* The receive checker for those: data at its offset must be bc_pattern(tag,
 * src, 0, offset); bc_rx_bytes(src) counts the data bytes received. */
void bc_rx_frags(bc_ctx_t *c, int src, unsigned long k, const unsigned char *data, size_t len);
size_t bc_rx_bytes(int src);
bool bc_rx_wait_bytes(bc_ctx_t *c, int src, size_t total);
/* A barrier through the messaging layer (the helper transports in the module job). */
int bc_barrier(bc_ctx_t *c);

/* btl_check_worker.c */
int bc_worker(int job, const char *name, double timeout, int argc, char **argv);

#endif
