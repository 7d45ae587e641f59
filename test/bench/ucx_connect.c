/*
 * ucx_connect: UCX's client/server connection setup (a UCP listener on a
 * socket address, client endpoints created from that address), the peer of
 * px_perf --connect (test/bench/compare-connect.sh). Debian 12's libucx-dev
 * ships no examples, hence this program; the method is px_perf's:
 *
 *   ucx_connect server ADDRFILE IP N   listen on IP (any free port), write
 *                                      "IP PORT" to ADDRFILE, serve N+1 connections
 *                                      one after another: an endpoint from the
 *                                      connection request, echo the first tagged
 *                                      message, wait for the bye, close
 *   ucx_connect client ADDRFILE N      N+1 connections: ucp_ep_create on the address
 *                                      to the first round trip done (setup_us), and
 *                                      ucp_ep_create alone (connect_us; UCX connects
 *                                      lazily, so this is small); the first, then the
 *                                      median, p90, p99 and largest of the others
 *
 * Build: cc -O2 -o ucx_connect ucx_connect.c -lucp -lucs
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucp/api/ucp.h>
#include <unistd.h>

#define TAG_PING 1
#define TAG_PONG 2
#define TAG_BYE  3

static ucp_context_h ctx;
static ucp_worker_h worker;
static ucp_conn_request_h pending;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what, ucs_status_t st)
{
    fprintf(stderr, "ucx_connect: %s: %s\n", what, ucs_status_string(st));
    exit(3);
}

static void on_conn(ucp_conn_request_h req, void *arg)
{
    (void)arg;
    if (pending) /* one at a time: the client connects sequentially */
        ucp_listener_reject(NULL, req);
    else
        pending = req;
}

static void on_err(void *arg, ucp_ep_h ep, ucs_status_t st)
{
    (void)arg;
    (void)ep;
    (void)st; /* the peer closed: expected after each connection */
}

/* Progress until the request completes; its status. */
static ucs_status_t wait_req(void *req)
{
    if (req == NULL)
        return UCS_OK;
    if (UCS_PTR_IS_ERR(req))
        return UCS_PTR_STATUS(req);
    ucs_status_t st;
    while ((st = ucp_request_check_status(req)) == UCS_INPROGRESS)
        ucp_worker_progress(worker);
    ucp_request_free(req);
    return st;
}

static void send_tag(ucp_ep_h ep, const void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t p = {0};
    ucs_status_t st = wait_req(ucp_tag_send_nbx(ep, buf, len, tag, &p));
    if (st != UCS_OK)
        die("ucp_tag_send_nbx", st);
}

static void recv_tag(void *buf, size_t len, ucp_tag_t tag)
{
    ucp_request_param_t p = {0};
    ucs_status_t st = wait_req(ucp_tag_recv_nbx(worker, buf, len, tag, (ucp_tag_t)-1, &p));
    if (st != UCS_OK)
        die("ucp_tag_recv_nbx", st);
}

static void close_ep(ucp_ep_h ep)
{
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};
    wait_req(ucp_ep_close_nbx(ep, &p));
}

static ucp_ep_h ep_params_create(ucp_ep_params_t *ep)
{
    ep->field_mask |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE | UCP_EP_PARAM_FIELD_ERR_HANDLER;
    ep->err_mode = UCP_ERR_HANDLING_MODE_PEER;
    ep->err_handler.cb = on_err;
    ep->err_handler.arg = NULL;
    ucp_ep_h h;
    ucs_status_t st = ucp_ep_create(worker, ep, &h);
    if (st != UCS_OK)
        die("ucp_ep_create", st);
    return h;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double quantile(const double *v, int n, double q)
{
    int i = (int)(q * n + 0.999999) - 1;
    return v[i < 0 ? 0 : (i >= n ? n - 1 : i)];
}

static void print_setup(const char *what, double first, double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    printf("%-10s %6d %10.1f %10.1f %10.1f %10.1f %10.1f\n", what, n, first * 1e6,
           quantile(v, n, 0.5) * 1e6, quantile(v, n, 0.9) * 1e6, quantile(v, n, 0.99) * 1e6,
           v[n - 1] * 1e6);
}

static int server(const char *file, const char *ip, int n)
{
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    if (inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        fprintf(stderr, "ucx_connect: '%s' is not a numeric IPv4 address\n", ip);
        return 2;
    }
    ucp_listener_params_t lp = {
        .field_mask = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR | UCP_LISTENER_PARAM_FIELD_CONN_HANDLER,
        .sockaddr = {.addr = (const struct sockaddr *)&sa, .addrlen = sizeof sa},
        .conn_handler = {.cb = on_conn, .arg = NULL}};
    ucp_listener_h l;
    ucs_status_t st = ucp_listener_create(worker, &lp, &l);
    if (st != UCS_OK)
        die("ucp_listener_create", st);
    ucp_listener_attr_t la = {.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR};
    if ((st = ucp_listener_query(l, &la)) != UCS_OK)
        die("ucp_listener_query", st);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", file);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        perror(tmp);
        return 2;
    }
    fprintf(f, "%s %u\n", ip, ntohs(((struct sockaddr_in *)&la.sockaddr)->sin_port));
    fclose(f);
    rename(tmp, file);
    for (int i = 0; i <= n; i++) {
        while (!pending)
            ucp_worker_progress(worker);
        ucp_ep_params_t ep = {.field_mask = UCP_EP_PARAM_FIELD_CONN_REQUEST,
                              .conn_request = pending};
        pending = NULL;
        ucp_ep_h h = ep_params_create(&ep);
        int v;
        recv_tag(&v, sizeof v, TAG_PING);
        send_tag(h, &v, sizeof v, TAG_PONG);
        recv_tag(&v, sizeof v, TAG_BYE);
        close_ep(h);
    }
    ucp_listener_destroy(l);
    return 0;
}

static int client(const char *file, int n)
{
    char ip[64] = "";
    unsigned port = 0;
    for (int i = 0; i < 600; i++) { /* up to 60 s for the server's file */
        FILE *f = fopen(file, "r");
        if (f) {
            int k = fscanf(f, "%63s %u", ip, &port);
            fclose(f);
            if (k == 2)
                break;
        }
        usleep(100000);
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (!port || inet_pton(AF_INET, ip, &sa.sin_addr) != 1) {
        fprintf(stderr, "ucx_connect: no \"IP PORT\" in %s after 60 s\n", file);
        return 2;
    }
    double *setup = malloc(sizeof(double) * (size_t)(n + 1));
    double *conn = malloc(sizeof(double) * (size_t)(n + 1));
    for (int i = 0; i <= n; i++) {
        int v = i, w = -1;
        double t0 = now();
        ucp_ep_params_t ep = {
            .field_mask = UCP_EP_PARAM_FIELD_FLAGS | UCP_EP_PARAM_FIELD_SOCK_ADDR,
            .flags = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER,
            .sockaddr = {.addr = (const struct sockaddr *)&sa, .addrlen = sizeof sa}};
        ucp_ep_h h = ep_params_create(&ep);
        double t1 = now();
        send_tag(h, &v, sizeof v, TAG_PING);
        recv_tag(&w, sizeof w, TAG_PONG);
        double t2 = now();
        if (w != v) {
            fprintf(stderr, "ucx_connect: echo %d, expected %d\n", w, v);
            return 3;
        }
        setup[i] = t2 - t0;
        conn[i] = t1 - t0;
        send_tag(h, &v, sizeof v, TAG_BYE);
        ucp_request_param_t fp = {0};
        wait_req(ucp_ep_flush_nbx(h, &fp));
        close_ep(h);
    }
    printf("%-10s %6s %10s %10s %10s %10s %10s\n", "what", "n", "first", "median", "p90", "p99",
           "max");
    print_setup("setup_us", setup[0], setup + 1, n);
    print_setup("connect_us", conn[0], conn + 1, n);
    free(setup);
    free(conn);
    return 0;
}

int main(int argc, char **argv)
{
    int srv = argc == 5 && !strcmp(argv[1], "server");
    int cli = argc == 4 && !strcmp(argv[1], "client");
    if ((!srv && !cli) || atoi(argv[argc - 1]) < 1) {
        fprintf(stderr, "usage: ucx_connect server ADDRFILE IP N | client ADDRFILE N (N >= 1)\n");
        return 2;
    }
    ucp_params_t pp = {.field_mask = UCP_PARAM_FIELD_FEATURES, .features = UCP_FEATURE_TAG};
    ucs_status_t st = ucp_init(&pp, NULL, &ctx);
    if (st != UCS_OK)
        die("ucp_init", st);
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SINGLE};
    if ((st = ucp_worker_create(ctx, &wp, &worker)) != UCS_OK)
        die("ucp_worker_create", st);
    int rc = srv ? server(argv[2], argv[3], atoi(argv[4])) : client(argv[2], atoi(argv[3]));
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    return rc;
}
