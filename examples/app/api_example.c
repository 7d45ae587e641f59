/* api_example.c: the example program of docs/api.md (kept compiling and
 * running by test/runtime/t_api_example.sh; installed under
 * share/doc/plexus/examples/app). Each rank passes a token around a ring,
 * then rank 0 collects one message from every rank in any order. */
#include <plexus.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rc = px_init(&argc, &argv);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_init: %s\n", px_strerror(rc));
        return 1;
    }
    int rank = px_rank(), size = px_size();

    /* Ring: post the receive first, then send; nothing blocks forever. */
    int token = rank, got = -1;
    px_request_t *req;
    px_irecv(&got, sizeof(got), (rank + size - 1) % size, 1, &req);
    px_send(&token, sizeof(token), (rank + 1) % size, 1);
    px_status_t st;
    px_wait(&req, &st);
    printf("rank %d got token %d from rank %d (via %s)\n", rank, got, st.source,
           px_transport_name(st.source));

    /* Gather to rank 0 in arrival order with wildcards. */
    char line[64];
    snprintf(line, sizeof(line), "hello from rank %d", rank);
    px_request_t *sreq;
    px_isend(line, strlen(line) + 1, 0, 100 + rank, &sreq);
    if (rank == 0) {
        for (int i = 0; i < size; ++i) {
            char buf[64];
            rc = px_recv(buf, sizeof(buf), PX_ANY_SOURCE, PX_ANY_TAG, &st);
            printf("rank 0: \"%s\" (source %d, tag %d, %zu bytes)\n", buf, st.source, st.tag,
                   st.length);
        }
    }
    px_wait(&sreq, NULL);

    /* A receive buffer too small: PX_ERR_TRUNCATE, the next message is intact. */
    char big[1000] = "a long message", small[4];
    px_isend(big, sizeof(big), rank, 7, &sreq);
    rc = px_recv(small, sizeof(small), rank, 7, &st);
    printf("rank %d: truncated receive: %s, %zu bytes kept\n", rank, px_strerror(rc), st.length);
    px_wait(&sreq, NULL);

    px_barrier();
    return px_finalize() == PX_SUCCESS ? 0 : 1;
}
