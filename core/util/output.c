/*
 * output.c: output streams with per-stream verbosity.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/util/error.h"
#include "core/util/output.h"

typedef struct {
    int used;
    int verbosity;
    char prefix[64];
} px_stream_t;

static px_stream_t streams[PX_OUTPUT_MAX_STREAMS] = {{1, 0, "plexus"}};
static pthread_mutex_t out_lock = PTHREAD_MUTEX_INITIALIZER;
static char host[64];

int px_output_open(const char *prefix, int verbosity)
{
    pthread_mutex_lock(&out_lock);
    for (int i = 1; i < PX_OUTPUT_MAX_STREAMS; i++) {
        if (!streams[i].used) {
            streams[i].used = 1;
            streams[i].verbosity = verbosity;
            snprintf(streams[i].prefix, sizeof(streams[i].prefix), "%s", prefix ? prefix : "");
            pthread_mutex_unlock(&out_lock);
            return i;
        }
    }
    pthread_mutex_unlock(&out_lock);
    return PX_ERR_OUT_OF_RESOURCE;
}

void px_output_close(int stream)
{
    if (stream > 0 && stream < PX_OUTPUT_MAX_STREAMS) {
        pthread_mutex_lock(&out_lock);
        streams[stream].used = 0;
        streams[stream].verbosity = 0;
        pthread_mutex_unlock(&out_lock);
    }
}

void px_output_set_verbosity(int stream, int level)
{
    if (stream >= 0 && stream < PX_OUTPUT_MAX_STREAMS)
        streams[stream].verbosity = level;
}

int px_output_get_verbosity(int stream)
{
    return (stream >= 0 && stream < PX_OUTPUT_MAX_STREAMS) ? streams[stream].verbosity : 0;
}

bool px_output_check(int stream, int level)
{
    return stream >= 0 && stream < PX_OUTPUT_MAX_STREAMS && streams[stream].used &&
           streams[stream].verbosity >= level;
}

static void emit(const char *prefix, const char *fmt, va_list ap)
{
    char msg[4096];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    const char *nl = (n > 0 && msg[n - 1] == '\n') ? "" : "\n";
    if (!host[0]) {
        gethostname(host, sizeof(host) - 1);
        char *dot = strchr(host, '.');
        if (dot)
            *dot = '\0';
    }
    fprintf(stderr, "[%s:%d] %s%s%s%s", host, (int)getpid(), prefix, prefix[0] ? ": " : "", msg,
            nl);
}

void px_output_vprint(int stream, const char *fmt, va_list ap)
{
    if (stream < 0 || stream >= PX_OUTPUT_MAX_STREAMS || !streams[stream].used)
        stream = 0;
    pthread_mutex_lock(&out_lock);
    emit(streams[stream].prefix, fmt, ap);
    pthread_mutex_unlock(&out_lock);
}

void px_output(int stream, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    px_output_vprint(stream, fmt, ap);
    va_end(ap);
}

static void show(const char *kind, const char *fmt, va_list ap)
{
    char msg[8192];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    size_t n = strlen(msg);
    pthread_mutex_lock(&out_lock);
    fprintf(stderr, "plexus: %s: %s%s", kind, msg, (n && msg[n - 1] == '\n') ? "" : "\n");
    pthread_mutex_unlock(&out_lock);
}

void px_show_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    show("error", fmt, ap);
    va_end(ap);
}

void px_show_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    show("warning", fmt, ap);
    va_end(ap);
}
