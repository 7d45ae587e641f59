/*
 * px_probe: ranks that die or vanish, for test/pxrun/t_pxrun.sh and
 * test/shm/t_shm.sh.
 *
 *   px_probe nofinalize R STATUS   rank R returns STATUS from main without
 *                                  px_finalize; the others call px_finalize
 *   px_probe peerdeath R kill|exit SIGTERM ignored everywhere; rank R
 *                                  SIGKILLs itself (kill) or _exits 0 without
 *                                  px_finalize (exit); the others wait in
 *                                  px_recv from R and print what it returned:
 *                                  "rank N: recv from rank R: TEXT after S s"
 *   px_probe launcher              prints "ready RANK PID JOBID", then rank 0
 *                                  waits in px_recv from rank 1 (which never
 *                                  sends) and the others sleep outside
 *                                  Plexus, for 60 s, then print "survived"
 *   px_probe orphan FILE           every rank prints "ready RANK PID JOBID",
 *                                  waits (outside Plexus) until FILE exists,
 *                                  then returns 1 from main without
 *                                  px_finalize
 *   px_probe hold S                every rank prints "ready RANK", holds the
 *                                  job for S seconds (outside Plexus), then
 *                                  px_finalize (test/util/t_fs_race.sh)
 *
 * Every line is flushed at once (stdout is a pipe to pxrun).
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "runtime/plexus.h"

static int init(int *argc, char ***argv)
{
    int rc = px_init(argc, argv);
    if (rc != PX_SUCCESS) {
        fprintf(stderr, "px_probe: px_init: %s\n", px_strerror(rc));
        exit(1);
    }
    return px_rank();
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "nofinalize") && argc == 4) {
        int victim = atoi(argv[2]), status = atoi(argv[3]);
        int me = init(&argc, &argv);
        px_barrier();
        if (me == victim)
            return status; /* no px_finalize */
        int rc = px_finalize();
        printf("rank %d: px_finalize: %s\n", me, px_strerror(rc));
        return 0;
    }
    if (!strcmp(mode, "peerdeath") && argc == 4) {
        int victim = atoi(argv[2]);
        bool kill_it = !strcmp(argv[3], "kill");
        signal(SIGTERM, SIG_IGN); /* so that only btl/shm can end the wait */
        int me = init(&argc, &argv);
        printf("rank %d: transport to rank %d: %s\n", me, victim,
               px_transport_name(victim) ? px_transport_name(victim) : "none");
        px_barrier();
        if (me == victim) {
            if (kill_it)
                raise(SIGKILL);
            _exit(0);
        }
        char buf[8];
        px_status_t st;
        double t0 = px_wtime();
        int rc = px_recv(buf, sizeof buf, victim, 7, &st);
        printf("rank %d: recv from rank %d: %s after %.3f s\n", me, victim, px_strerror(rc),
               px_wtime() - t0);
        _exit(rc == PX_ERR_PEER_FAILED ? 0 : 1);
    }
    if (!strcmp(mode, "launcher")) {
        int me = init(&argc, &argv);
        const char *job = getenv("PX_JOBID");
        printf("ready %d %d %s\n", me, (int)getpid(), job ? job : "?");
        if (me == 0 && px_size() > 1) {
            char buf[8];
            px_status_t st;
            int rc = px_recv(buf, sizeof buf, 1, 7, &st); /* rank 1 never sends */
            fprintf(stderr, "rank 0: recv returned %s\n", px_strerror(rc));
            return 1;
        }
        for (int i = 0; i < 600; i++) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        printf("survived %d\n", me);
        return 1;
    }
    if (!strcmp(mode, "orphan") && argc == 3) {
        const char *go = argv[2];
        int me = init(&argc, &argv);
        const char *job = getenv("PX_JOBID");
        printf("ready %d %d %s\n", me, (int)getpid(), job ? job : "?");
        for (int i = 0; i < 600 && access(go, F_OK) != 0; i++) {
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        return 1;
    }
    if (!strcmp(mode, "hold") && argc == 3) {
        double s = atof(argv[2]);
        int me = init(&argc, &argv);
        printf("ready %d\n", me);
        struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
        nanosleep(&ts, NULL);
        int rc = px_finalize();
        return rc == PX_SUCCESS ? 0 : 1;
    }
    fprintf(stderr, "usage: px_probe nofinalize R STATUS | peerdeath R kill|exit | launcher | "
                    "orphan FILE | hold S\n");
    return 2;
}
