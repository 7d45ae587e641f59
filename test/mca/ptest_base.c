/*
 * ptest_base.c: the test-only framework "ptest" and its built-in components.
 * alpha (priority from ptest_alpha_priority, default 10), beta (20), shy
 * (declines), broken (open fails with PX_ERR_NOT_AVAILABLE).
 */
#include <stdio.h>
#include <string.h>
#include "core/mca/var.h"
#include "core/util/error.h"
#include "test/mca/ptest.h"

static char log_buf[4096];

void ptest_log(const char *event)
{
    size_t n = strlen(log_buf);
    snprintf(log_buf + n, sizeof(log_buf) - n, "%s%s", n ? " " : "", event);
}

const char *ptest_log_get(void)
{
    return log_buf;
}
void ptest_log_clear(void)
{
    log_buf[0] = '\0';
}

static int fw_register(void)
{
    ptest_log("fw:register");
    return PX_SUCCESS;
}
static int fw_open(void)
{
    ptest_log("fw:open");
    return PX_SUCCESS;
}
static int fw_close(void)
{
    ptest_log("fw:close");
    return PX_SUCCESS;
}

px_mca_framework_t px_ptest_base_framework = {
    .name = "ptest",
    .description = "test-only framework",
    .api_version = {PX_PTEST_API_MAJOR, PX_PTEST_API_MINOR, 0},
    .register_fn = fw_register,
    .open_fn = fw_open,
    .close_fn = fw_close,
};

/* alpha */
static int alpha_priority = 10;
static int alpha_register(void)
{
    ptest_log("alpha:register");
    int rc = px_mca_var_register("ptest", "alpha", "priority", "Priority of ptest/alpha",
                                 PX_MCA_VAR_TYPE_INT, NULL, 3, PX_MCA_VAR_SCOPE_LOCAL, 0,
                                 &alpha_priority);
    return rc < 0 && rc != PX_ERR_BAD_PARAM ? rc : PX_SUCCESS;
}
static int alpha_open(void)
{
    ptest_log("alpha:open");
    return PX_SUCCESS;
}
static int alpha_close(void)
{
    ptest_log("alpha:close");
    return PX_SUCCESS;
}
static int alpha_query(int *priority)
{
    ptest_log("alpha:query");
    *priority = alpha_priority;
    return PX_SUCCESS;
}
static const px_ptest_component_t alpha = {
    .base = PX_MCA_COMPONENT_HEADER("ptest", 1, 0, 0, "alpha", 1, 0, 0, alpha_register, alpha_open,
                                    alpha_close),
    .query = alpha_query,
};

/* beta */
static int beta_register(void)
{
    ptest_log("beta:register");
    return PX_SUCCESS;
}
static int beta_open(void)
{
    ptest_log("beta:open");
    return PX_SUCCESS;
}
static int beta_close(void)
{
    ptest_log("beta:close");
    return PX_SUCCESS;
}
static int beta_query(int *priority)
{
    ptest_log("beta:query");
    *priority = 20;
    return PX_SUCCESS;
}
static const px_ptest_component_t beta = {
    .base = PX_MCA_COMPONENT_HEADER("ptest", 1, 0, 0, "beta", 2, 1, 0, beta_register, beta_open,
                                    beta_close),
    .query = beta_query,
};

/* shy: opens but declines in query */
static int shy_close(void)
{
    ptest_log("shy:close");
    return PX_SUCCESS;
}
static int shy_query(int *priority)
{
    ptest_log("shy:query");
    *priority = -1;
    return PX_SUCCESS;
}
static const px_ptest_component_t shy = {
    .base = PX_MCA_COMPONENT_HEADER("ptest", 1, 0, 0, "shy", 1, 0, 0, NULL, NULL, shy_close),
    .query = shy_query,
};

/* broken: open fails */
static int broken_open(void)
{
    ptest_log("broken:open");
    return PX_ERR_NOT_AVAILABLE;
}
static int broken_close(void)
{
    ptest_log("broken:close");
    return PX_SUCCESS;
}
static const px_ptest_component_t broken = {
    .base = PX_MCA_COMPONENT_HEADER("ptest", 1, 0, 0, "broken", 1, 0, 0, NULL, broken_open,
                                    broken_close),
};

void ptest_add_builtins(void)
{
    px_mca_repository_add_static(&alpha.base);
    px_mca_repository_add_static(&beta.base);
    px_mca_repository_add_static(&shy.base);
    px_mca_repository_add_static(&broken.base);
}
