/*
 * boot.h: how a process learns who it is and where its peers are.
 * One boot module is selected by priority (pmix under a PMIx launcher, pxrun
 * under pxrun, singleton otherwise). It gives rank, size, job id, each peer's
 * host and locality, and the modex: put/commit/fence/get of binary blobs that
 * BTL components use to exchange addresses (through px_boot_modex_* below).
 */
#ifndef PX_BOOT_H
#define PX_BOOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "core/util/compiler.h"
#include "core/mca/component.h"

#define PX_BOOT_API_MAJOR   1
#define PX_BOOT_API_MINOR   1
#define PX_BOOT_API_RELEASE 0

typedef struct px_boot_module {
    const char *name; /* the component's name, for messages */
    /* Called once after selection: learn rank, size, job. */
    int (*init)(void);
    int rank;
    int size;
    const char *jobid; /* unique per job; used in shm file names and job keys */
    /* A peer's host name (a string the module owns) and locality bits
     * (PX_PROC_LOCAL_*, relative to this process). */
    const char *(*hostname)(int rank);
    uint32_t (*locality)(int rank);
    /* Modex: publish `len` bytes under `key`; commit makes them visible at
     * the next fence; fence is collective over the job; get returns a peer's
     * blob in a buffer the caller frees. */
    int (*put)(const char *key, const void *data, size_t len);
    int (*commit)(void);
    int (*fence)(void);
    int (*get)(int rank, const char *key, void **data, size_t *len);
    /* Ask the launcher to end the job, with a message; does not return. */
    void (*abort)(int status, const char *msg);
    int (*finalize)(void);
    /* Optional: a per-job, per-node folder that the launcher made before the
     * ranks started and removes at the end of the job (pxrun's session
     * folder; Slurm's step folder, PMIX_NSDIR, under boot/pmix); the base
     * makes the job's 0700 scratch folder inside it. NULL (or no function):
     * the base makes one under $TMPDIR. Used by px_boot_session_dir. */
    const char *(*session_dir)(void);
    /* API 1.1, optional: ask the launcher to remove `path` for us (boot/pmix:
     * PMIX_REGISTER_CLEANUP). PX_BOOT_CLEANUP_FILE: a file of this process,
     * removed when this process ends, however it ends.
     * PX_BOOT_CLEANUP_EMPTY_DIR: a folder of the job, removed when the whole
     * job has ended, and only when it is empty then (never recursively: the
     * name may belong to someone else by then). PX_ERR_NOT_AVAILABLE when the
     * launcher does not offer it. A launcher removes by path: only for names
     * inside (or, for the folder, directly in) a place the job controls. Read
     * only when the component's API minor is 1 or more. */
    int (*register_cleanup)(const char *path, int what);
} px_boot_module_t;

/* A boot component: query says whether it can serve this process and with
 * what priority (higher wins; negative declines), returning its module. */
typedef struct px_boot_component {
    px_mca_component_t base;
    int (*query)(int *priority, px_boot_module_t **module);
} px_boot_component_t;

/* ---- frameworks/boot/base: used by the runtime and BTL components ---- */

/* Open the boot framework and select the module (highest priority). */
PX_EXPORT int px_boot_base_select(void);
PX_EXPORT int px_boot_base_close(void);
/* The selected module, or NULL before selection. */
PX_EXPORT extern px_boot_module_t *px_boot;
PX_EXPORT extern struct px_mca_framework px_boot_base_framework;

/* Modex helpers keyed by component: key "<fw>.<component>". */
PX_EXPORT int px_boot_modex_send(const px_mca_component_t *component, const void *data, size_t len);
PX_EXPORT int px_boot_modex_recv(const px_mca_component_t *component, int rank, void **data,
                                 size_t *len);

/* Ask the launcher to remove `path` (what: PX_BOOT_CLEANUP_*, above) once
 * this process (a file) or the job (an empty folder) has ended (boot/pmix
 * under a PMIx server that offers it); PX_ERR_NOT_AVAILABLE when the boot
 * module or its launcher does not. Best effort: the processes still remove
 * their files themselves. */
#define PX_BOOT_CLEANUP_FILE      1
#define PX_BOOT_CLEANUP_EMPTY_DIR 2
PX_EXPORT int px_boot_register_cleanup(const char *path, int what);

/* The job's scratch folder on this node: one folder that every rank of the
 * job on this node shares, made with mode 0700 on the first call (under
 * pxrun, pmix and singleton alike) and removed at the end of the job (by
 * pxrun when it launched the job; otherwise by the last local rank to reach
 * px_finalize). A component keeps per-job files there (a socket, a segment
 * file, a cache). NULL (reported once, naming the folder and why) when it
 * cannot be made, or before boot selection. Ranks that finish early do not
 * wait for the others: a file another rank made may be gone once that rank
 * and every other user of the folder has finalized. */
PX_EXPORT const char *px_boot_session_dir(void);
/* This rank's own folder inside it ("<session_dir>/rank-<rank>", 0700),
 * removed when this rank finalizes. NULL as above. */
PX_EXPORT const char *px_boot_proc_session_dir(void);
/* At px_boot_base_close: remove this rank's folder, and the job's folder
 * when this rank is the last local user of a folder the base made. */
void px_boot_base_session_close(void);

#endif
