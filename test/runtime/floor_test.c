/*
 * floor_test.c: the runtime's floor (docs/architecture.md, "The runtime's
 * sub-layers"), in one process over btl/self: the process table's progress
 * hooks run in px_progress and may remove themselves; a peer's failure is a
 * notice its subscribers get in order, after messaging has failed the
 * peer's receives; a request of a layer above messaging (PX_PML_REQ_GENERIC)
 * finishes through its own hooks: free when px_wait returns it, give-up
 * (with its name in the message) when a wait gives up on it.
 */
#include "test/lib/px_check.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "runtime/plexus.h"
#include "runtime/runtime.h"

static int runs_a, runs_b;
static int hook_a(void)
{
    runs_a++;
    px_rt_progress_unregister(hook_a); /* once */
    return 1;
}
static int hook_b(void)
{
    runs_b++;
    return 0;
}

START_TEST(progress_hooks)
{
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS);
    int base = px_rt.nprogress;
    ck_assert_int_eq(px_rt_progress_register(hook_a), PX_SUCCESS);
    ck_assert_int_eq(px_rt_progress_register(hook_b), PX_SUCCESS);
    ck_assert_int_eq(px_rt_progress_register(hook_b), PX_SUCCESS); /* once only */
    ck_assert_int_eq(px_rt.nprogress, base + 2);
    px_progress();
    /* hook_a removed itself; hook_b moved into its slot and still ran. */
    ck_assert_int_eq(runs_a, 1);
    ck_assert_int_eq(runs_b, 1);
    px_progress();
    ck_assert_int_eq(runs_a, 1);
    ck_assert_int_eq(runs_b, 2);
    px_rt_progress_unregister(hook_b);
    ck_assert_int_eq(px_rt.nprogress, base);
    px_progress();
    ck_assert_int_eq(runs_b, 2);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

static px_request_t *watched;
static int notices, notice_rank, notice_error, recv_done_first;
static bool notice_gone;
static void on_fail(int rank, int error, const char *why, bool transport_gone)
{
    notices++;
    notice_rank = rank;
    notice_error = error;
    notice_gone = transport_gone;
    ck_assert_ptr_nonnull(why);
    /* Messaging subscribed first: the peer's receive has already failed. */
    recv_done_first = watched && watched->complete;
}

START_TEST(failure_notice)
{
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_rt_fail_subscribe(on_fail), PX_SUCCESS);
    int v = 0;
    ck_assert_int_eq(px_irecv(&v, sizeof(v), 0, 1, &watched), PX_SUCCESS);
    px_rt_btl_error(NULL, NULL, 0, PX_ERR_PEER_FAILED, "test: connection lost");
    ck_assert_int_eq(notices, 1);
    ck_assert_int_eq(notice_rank, 0);
    ck_assert_int_eq(notice_error, PX_ERR_PEER_FAILED);
    ck_assert(notice_gone);
    ck_assert(recv_done_first);
    ck_assert_int_eq(px_wait(&watched, NULL), PX_ERR_PEER_FAILED);
    /* A failed peer is not failed again. */
    px_rt_fail_peer(0, PX_ERR_PEER_FAILED, "test: again");
    ck_assert_int_eq(notices, 1);
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

START_TEST(failure_notice_decided_here)
{
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS);
    ck_assert_int_eq(px_rt_fail_subscribe(on_fail), PX_SUCCESS);
    watched = NULL;
    px_rt_fail_peer(0, PX_ERR_PEER_FAILED, "test: decided here");
    ck_assert_int_eq(notices, 1);
    ck_assert(!notice_gone);
    ck_assert(px_rt.peers[0].failed_here);
    ck_assert_uint_eq(px_rt.peers[0].tiny_below, 0); /* messaging closed the immediate path */
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

static int frees, give_ups;
static char give_up_text[512];
static void gen_free(px_request_t *r)
{
    frees++;
    ck_assert_ptr_eq(r->owner, &frees);
}
static void gen_give_up(px_request_t *r, int error, const char *what)
{
    give_ups++;
    ck_assert_int_eq(error, PX_ERR_TIMEOUT);
    snprintf(give_up_text, sizeof give_up_text, "%s", what);
    px_pml_request_free(r);
}
static const px_request_ops_t gen_ops = {"a test operation", gen_free, gen_give_up};

START_TEST(request_hooks)
{
    ck_assert_int_eq(px_init(NULL, NULL), PX_SUCCESS);
    px_request_t *r = px_pml_request_alloc(&gen_ops, &frees);
    ck_assert_ptr_nonnull(r);
    px_pml_request_complete(r, PX_ERR_TRUNCATE);
    px_status_t st;
    ck_assert_int_eq(px_wait(&r, &st), PX_ERR_TRUNCATE);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(frees, 1);
    ck_assert_int_eq(give_ups, 0);
    /* Alone in the job with nothing to progress: the wait gives up at once
     * and the owner's hook reports it under its own name. */
    r = px_pml_request_alloc(&gen_ops, &frees);
    ck_assert_int_eq(px_wait(&r, NULL), PX_ERR_TIMEOUT);
    ck_assert_ptr_null(r);
    ck_assert_int_eq(give_ups, 1);
    ck_assert_int_eq(frees, 1);
    ck_assert_ptr_nonnull(strstr(give_up_text, "px_wait: a test operation can never complete"));
    ck_assert_int_eq(px_finalize(), PX_SUCCESS);
}
END_TEST

PX_CHECK_MAIN("floor", NULL, NULL, 0, progress_hooks, failure_notice, failure_notice_decided_here,
              request_hooks)
