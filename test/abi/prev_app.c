/* prev_app.c: an application as it was written for release 0.1 (the
 * headers of commit fad2781). t_abi_prev_release.sh compiles it against that
 * release's headers and library and runs the unchanged binary on the library
 * of this build: messaging, a collective, the transfer engine, and the
 * exported variable px_progress_policy, which a position-independent program
 * copies into itself at load time (a copy relocation sized by the 0.1
 * headers). It is not built by this tree's Makefile: its source must keep
 * compiling against the 0.1 headers.
 *
 * Prints "prev_app rank R: ..." lines and "prev_app rank R: PASS" at the end;
 * exits 1 at the first wrong result. Expects PX_MCA_progress_idle_wait_ms=7. */
#include <plexus.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/util/progress.h"
#include "runtime/plexus_xfer.h"

static int rank;
#define FAIL(...)                                                                                  \
    do {                                                                                           \
        printf("prev_app rank %d: FAIL: ", rank);                                                  \
        printf(__VA_ARGS__);                                                                       \
        printf("\n");                                                                              \
        fflush(stdout);                                                                            \
        exit(1);                                                                                   \
    } while (0)

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        printf("prev_app: px_init: %s\n", px_strerror(rc));
        return 1;
    }
    rank = px_rank();
    int size = px_size();

    /* The progress policy as 0.1 exported it: the variables' values. */
    printf("prev_app rank %d: policy size %zu, idle_wait_ms %d, idle_spins %d\n", rank,
           sizeof(px_progress_policy), px_progress_policy.idle_wait_ms,
           px_progress_policy.idle_spins);
    if (7 != px_progress_policy.idle_wait_ms)
        FAIL("px_progress_policy.idle_wait_ms is %d, not 7 (progress_idle_wait_ms)",
             px_progress_policy.idle_wait_ms);
    if (32 != px_progress_policy.idle_spins)
        FAIL("px_progress_policy.idle_spins is %d, not the default 32",
             px_progress_policy.idle_spins);

    /* Messaging: a ring, and a message to self. */
    int token = rank * 10 + 1, got = -1;
    px_request_t *req;
    px_status_t st;
    if (px_irecv(&got, sizeof(got), (rank + size - 1) % size, 5, &req) != PX_SUCCESS ||
        px_send(&token, sizeof(token), (rank + 1) % size, 5) != PX_SUCCESS ||
        px_wait(&req, &st) != PX_SUCCESS)
        FAIL("ring messaging failed");
    int want = ((rank + size - 1) % size) * 10 + 1;
    if (got != want || st.source != (rank + size - 1) % size || st.tag != 5)
        FAIL("ring: got %d from %d tag %d, want %d", got, st.source, st.tag, want);
    printf("prev_app rank %d: ring token %d from rank %d\n", rank, got, st.source);

    /* A collective on the world group. */
    long v[4] = {rank, 1, 2 * rank, 100}, sum[4];
    rc = px_allreduce(v, sum, 4, PX_INT64, PX_SUM, px_group_world());
    long n = size;
    if (rc != PX_SUCCESS || sum[0] != n * (n - 1) / 2 || sum[1] != n || sum[2] != n * (n - 1) ||
        sum[3] != 100 * n)
        FAIL("allreduce: rc %d, %ld %ld %ld %ld", rc, sum[0], sum[1], sum[2], sum[3]);
    printf("prev_app rank %d: allreduce %ld %ld %ld %ld\n", rank, sum[0], sum[1], sum[2], sum[3]);

    /* The transfer engine: every rank exposes a region; each writes its
     * rank into the next rank's region and reads it back. */
    px_xfer_region_t *mine = NULL, *scratch = NULL;
    if (px_xfer_alloc(4096, &mine) != PX_SUCCESS || px_xfer_alloc(4096, &scratch) != PX_SUCCESS)
        FAIL("px_xfer_alloc: %s", px_xfer_last_error());
    unsigned char key[PX_XFER_KEY_MAX];
    size_t klen = 0;
    if (px_xfer_key_export(mine, key, sizeof(key), &klen) != PX_SUCCESS)
        FAIL("px_xfer_key_export: %s", px_xfer_last_error());
    /* Keys travel as messages: send mine to the previous rank, get the next's. */
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    unsigned char theirs[PX_XFER_KEY_MAX];
    if (px_irecv(theirs, sizeof(theirs), next, 6, &req) != PX_SUCCESS ||
        px_send(key, klen, prev, 6) != PX_SUCCESS || px_wait(&req, &st) != PX_SUCCESS)
        FAIL("key exchange failed");
    px_xfer_remote_t *remote = NULL;
    if (px_xfer_key_import(next, theirs, st.length, &remote) != PX_SUCCESS)
        FAIL("px_xfer_key_import: %s", px_xfer_last_error());
    unsigned char *s = px_xfer_region_base(scratch);
    memset(s, 0xa0 + rank, 64);
    if (px_xfer_write(scratch, 0, remote, 128, 64) != PX_SUCCESS)
        FAIL("px_xfer_write: %s", px_xfer_last_error());
    memset(s, 0, 64);
    if (px_xfer_read(scratch, 0, remote, 128, 64) != PX_SUCCESS)
        FAIL("px_xfer_read: %s", px_xfer_last_error());
    for (int i = 0; i < 64; i++)
        if (s[i] != 0xa0 + rank)
            FAIL("xfer: byte %d read back as %#x, wrote %#x", i, s[i], 0xa0 + rank);
    px_barrier();
    const unsigned char *m = px_xfer_region_base(mine);
    if (m[128] != 0xa0 + prev || m[191] != 0xa0 + prev)
        FAIL("xfer: rank %d's write into my region reads %#x", prev, m[128]);
    printf("prev_app rank %d: xfer wrote to rank %d and read back\n", rank, next);
    px_xfer_remote_release(&remote);
    px_xfer_free(&scratch);
    px_xfer_free(&mine);

    /* Still the values the library set: nothing wrote past the 0.1 size. */
    if (7 != px_progress_policy.idle_wait_ms)
        FAIL("px_progress_policy.idle_wait_ms changed to %d", px_progress_policy.idle_wait_ms);
    px_barrier();
    rc = px_finalize();
    if (rc != PX_SUCCESS)
        FAIL("px_finalize: %s", px_strerror(rc));
    printf("prev_app rank %d: PASS\n", rank);
    return 0;
}
