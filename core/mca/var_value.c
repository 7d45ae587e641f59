/*
 * var_value.c: the values of MCA variables: parsing text into a value of the
 * variable's type, formatting it back, reading and writing the caller's
 * storage, ranges, and the messages about values that are not accepted.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "core/mca/var_internal.h"
#include "core/util/error.h"
#include "core/util/output.h"
#include "core/util/printf.h"

/* --------------------------------------------------------- types and text */

const char *px_mca_var_type_name(px_mca_var_type_t type)
{
    switch (type) {
    case PX_MCA_VAR_TYPE_INT:
        return "int";
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return "unsigned";
    case PX_MCA_VAR_TYPE_SIZE:
        return "size";
    case PX_MCA_VAR_TYPE_BOOL:
        return "bool";
    case PX_MCA_VAR_TYPE_DOUBLE:
        return "double";
    case PX_MCA_VAR_TYPE_STRING:
        return "string";
    case PX_MCA_VAR_TYPE_ENUM:
        return "enum";
    }
    return "?";
}

char *px_mca_var_accepted_forms(px_mca_var_type_t type, const px_mca_var_enum_value_t *ev)
{
    switch (type) {
    case PX_MCA_VAR_TYPE_INT:
        return strdup("an integer, e.g. 42, -1 or 0x10");
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return strdup("a non-negative integer, e.g. 0, 42 or 0x10");
    case PX_MCA_VAR_TYPE_SIZE:
        return strdup("a byte count with an optional k, M or G suffix (powers of 1024), "
                      "e.g. 4096, 64k, 2M, 1G");
    case PX_MCA_VAR_TYPE_BOOL:
        return strdup("1/0, true/false, yes/no, on/off");
    case PX_MCA_VAR_TYPE_DOUBLE:
        return strdup("a number, e.g. 0.5, 3 or 1e-3");
    case PX_MCA_VAR_TYPE_STRING:
        return strdup("any text");
    case PX_MCA_VAR_TYPE_ENUM: {
        size_t len = 32;
        for (const px_mca_var_enum_value_t *e = ev; e && e->name; e++)
            len += strlen(e->name) + 16;
        char *out = malloc(len);
        if (!out)
            return NULL;
        strcpy(out, "one of ");
        for (const px_mca_var_enum_value_t *e = ev; e && e->name; e++) {
            char buf[64];
            snprintf(buf, sizeof(buf), " (%d)", e->value);
            if (e != ev)
                strcat(out, ", ");
            strcat(out, e->name);
            strcat(out, buf);
        }
        return out;
    }
    }
    return strdup("?");
}

static bool parse_u64(const char *s, unsigned long long *out)
{
    errno = 0;
    char *end;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || *s == '\0')
        return false;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno || end == s)
        return false;
    while (isspace((unsigned char)*end))
        end++;
    if (*end)
        return false;
    *out = v;
    return true;
}

/* Only blanks from s to its end (reads; never writes into the value). */
static bool only_blanks(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

/* `text`, without the blanks around it, is `word` (any case). Compares the
 * whole text, however long. */
static bool is_word(const char *text, const char *word)
{
    while (isspace((unsigned char)*text))
        text++;
    size_t n = strlen(text);
    while (n > 0 && isspace((unsigned char)text[n - 1]))
        n--;
    return n == strlen(word) && 0 == strncasecmp(text, word, n);
}

/* Parse `text` for variable `v` into *out (strings are strdup'ed). `text` is
 * not modified (it may be the caller's constant). */
bool px_mca_var_parse(const var_t *v, const char *text, value_t *out)
{
    char *end;
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT: {
        errno = 0;
        long x = strtol(text, &end, 0);
        if (errno || end == text || !only_blanks(end) || x < INT_MIN || x > INT_MAX)
            return false;
        out->i = (int)x;
        return true;
    }
    case PX_MCA_VAR_TYPE_UNSIGNED: {
        unsigned long long x;
        if (!parse_u64(text, &x) || x > UINT_MAX)
            return false;
        out->u = (unsigned)x;
        return true;
    }
    case PX_MCA_VAR_TYPE_SIZE: {
        const char *s = text;
        while (isspace((unsigned char)*s))
            s++;
        if (*s == '-' || !isdigit((unsigned char)*s))
            return false;
        errno = 0;
        unsigned long long x = strtoull(s, &end, 0);
        if (errno || end == s)
            return false;
        unsigned shift = 0;
        switch (*end) {
        case 'k':
        case 'K':
            shift = 10;
            end++;
            break;
        case 'm':
        case 'M':
            shift = 20;
            end++;
            break;
        case 'g':
        case 'G':
            shift = 30;
            end++;
            break;
        default:
            break;
        }
        while (isspace((unsigned char)*end))
            end++;
        if (*end)
            return false;
        if (shift && x > (SIZE_MAX >> shift))
            return false;
        if (x > SIZE_MAX)
            return false;
        out->z = (size_t)(x << shift);
        return true;
    }
    case PX_MCA_VAR_TYPE_BOOL: {
        static const char *yes[] = {"1", "true", "yes", "on", "y", "t"};
        static const char *no[] = {"0", "false", "no", "off", "n", "f"};
        for (size_t i = 0; i < sizeof(yes) / sizeof(*yes); i++) {
            if (is_word(text, yes[i])) {
                out->b = true;
                return true;
            }
            if (is_word(text, no[i])) {
                out->b = false;
                return true;
            }
        }
        return false;
    }
    case PX_MCA_VAR_TYPE_DOUBLE: {
        errno = 0;
        double d = strtod(text, &end);
        if (errno || end == text || !only_blanks(end) || isnan(d))
            return false;
        out->d = d;
        return true;
    }
    case PX_MCA_VAR_TYPE_STRING:
        out->s = strdup(text);
        return out->s != NULL;
    case PX_MCA_VAR_TYPE_ENUM: {
        for (const px_mca_var_enum_value_t *e = v->enum_values; e && e->name; e++)
            if (is_word(text, e->name)) {
                out->i = e->value;
                return true;
            }
        const char *t = text;
        while (isspace((unsigned char)*t))
            t++;
        errno = 0;
        long x = strtol(t, &end, 0);
        if (errno || end == t || !only_blanks(end))
            return false;
        for (const px_mca_var_enum_value_t *e = v->enum_values; e && e->name; e++)
            if (e->value == x) {
                out->i = e->value;
                return true;
            }
        return false;
    }
    }
    return false;
}

char *px_mca_var_format(const var_t *v, const value_t *val)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
        return px_asprintf("%d", val->i);
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return px_asprintf("%u", val->u);
    case PX_MCA_VAR_TYPE_SIZE:
        return px_asprintf("%zu", val->z);
    case PX_MCA_VAR_TYPE_BOOL:
        return strdup(val->b ? "true" : "false");
    case PX_MCA_VAR_TYPE_DOUBLE:
        return px_asprintf("%g", val->d);
    case PX_MCA_VAR_TYPE_STRING:
        return strdup(val->s ? val->s : "");
    case PX_MCA_VAR_TYPE_ENUM:
        for (const px_mca_var_enum_value_t *e = v->enum_values; e && e->name; e++)
            if (e->value == val->i)
                return strdup(e->name);
        return px_asprintf("%d", val->i);
    }
    return strdup("?");
}

void px_mca_var_read_storage(const var_t *v, value_t *out)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
    case PX_MCA_VAR_TYPE_ENUM:
        out->i = *(int *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_UNSIGNED:
        out->u = *(unsigned *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_SIZE:
        out->z = *(size_t *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_BOOL:
        out->b = *(bool *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_DOUBLE:
        out->d = *(double *)v->storage;
        break;
    case PX_MCA_VAR_TYPE_STRING:
        out->s = *(char **)v->storage;
        break;
    }
}

/* Store `val` (strings: copied) into the variable's storage. */
void px_mca_var_write_storage(var_t *v, const value_t *val)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
    case PX_MCA_VAR_TYPE_ENUM:
        *(int *)v->storage = val->i;
        break;
    case PX_MCA_VAR_TYPE_UNSIGNED:
        *(unsigned *)v->storage = val->u;
        break;
    case PX_MCA_VAR_TYPE_SIZE:
        *(size_t *)v->storage = val->z;
        break;
    case PX_MCA_VAR_TYPE_BOOL:
        *(bool *)v->storage = val->b;
        break;
    case PX_MCA_VAR_TYPE_DOUBLE:
        *(double *)v->storage = val->d;
        break;
    case PX_MCA_VAR_TYPE_STRING: {
        char *copy = val->s ? strdup(val->s) : NULL;
        free(v->owned);
        v->owned = copy;
        *(char **)v->storage = copy;
        break;
    }
    }
}

const char *px_mca_var_source_name(px_mca_var_source_t s)
{
    switch (s) {
    case PX_MCA_VAR_SOURCE_DEFAULT:
        return "default";
    case PX_MCA_VAR_SOURCE_FILE:
        return "file";
    case PX_MCA_VAR_SOURCE_ENV:
        return "environment";
    case PX_MCA_VAR_SOURCE_COMMAND_LINE:
        return "command line";
    case PX_MCA_VAR_SOURCE_API:
        return "API";
    case PX_MCA_VAR_SOURCE_OVERRIDE:
        return "override file";
    }
    return "?";
}

/* "environment variable PX_MCA_x", "file /a/b.conf:3", "command line (--mca)". */
char *px_mca_var_describe_source(px_mca_var_source_t s, const char *where)
{
    switch (s) {
    case PX_MCA_VAR_SOURCE_ENV:
        return px_asprintf("environment variable %s", where ? where : "?");
    case PX_MCA_VAR_SOURCE_FILE:
    case PX_MCA_VAR_SOURCE_OVERRIDE:
        return px_asprintf("%s %s", px_mca_var_source_name(s), where ? where : "?");
    case PX_MCA_VAR_SOURCE_COMMAND_LINE:
        return where ? px_asprintf("command line (%s)", where) : strdup("command line");
    default:
        return strdup(px_mca_var_source_name(s));
    }
}

bool px_mca_var_has_range_type(px_mca_var_type_t type)
{
    return type == PX_MCA_VAR_TYPE_INT || type == PX_MCA_VAR_TYPE_UNSIGNED ||
           type == PX_MCA_VAR_TYPE_SIZE || type == PX_MCA_VAR_TYPE_DOUBLE;
}

/* a < b (-1), a == b (0), a > b (1) for the variable's type. */
static int compare_value(const var_t *v, const value_t *a, const value_t *b)
{
    switch (v->type) {
    case PX_MCA_VAR_TYPE_INT:
        return a->i < b->i ? -1 : a->i > b->i;
    case PX_MCA_VAR_TYPE_UNSIGNED:
        return a->u < b->u ? -1 : a->u > b->u;
    case PX_MCA_VAR_TYPE_SIZE:
        return a->z < b->z ? -1 : a->z > b->z;
    case PX_MCA_VAR_TYPE_DOUBLE:
        return a->d < b->d ? -1 : a->d > b->d;
    default:
        return 0;
    }
}

bool px_mca_var_in_range(const var_t *v, const value_t *val)
{
    if (v->has_min && compare_value(v, val, &v->rmin) < 0)
        return false;
    if (v->has_max && compare_value(v, val, &v->rmax) > 0)
        return false;
    return true;
}

void px_mca_var_range_texts(var_t *p)
{
    if (p->has_min && !p->range_min)
        p->range_min = px_mca_var_format(p, &p->rmin);
    if (p->has_max && !p->range_max)
        p->range_max = px_mca_var_format(p, &p->rmax);
}

/* What the variable accepts, with its range when it has one. */
char *px_mca_var_accepted_for(var_t *v)
{
    if (!v->has_min && !v->has_max)
        return px_mca_var_accepted_forms(v->type, v->enum_values);
    px_mca_var_range_texts(v);
    if ((v->has_min && !v->range_min) || (v->has_max && !v->range_max))
        return NULL;
    const char *what = v->type == PX_MCA_VAR_TYPE_SIZE     ? "a byte count"
                       : v->type == PX_MCA_VAR_TYPE_DOUBLE ? "a number"
                                                           : "an integer";
    const char *tail = v->type == PX_MCA_VAR_TYPE_SIZE
                           ? " (an optional k, M or G suffix multiplies by 1024, 1024^2, 1024^3)"
                           : "";
    if (v->has_min && v->has_max)
        return px_asprintf("%s from %s to %s%s", what, v->range_min, v->range_max, tail);
    if (v->has_min)
        return px_asprintf("%s of at least %s%s", what, v->range_min, tail);
    return px_asprintf("%s of at most %s%s", what, v->range_max, tail);
}

/* `out_of_range`: the text parsed but is outside the variable's range. */
void px_mca_var_report_bad_value(const var_t *v, const char *name, const char *text,
                                 px_mca_var_source_t s, const char *where, const char *keeping,
                                 bool out_of_range)
{
    px_mca_var_n_value_errors++;
    char *src = px_mca_var_describe_source(s, where);
    char *forms = px_mca_var_accepted_for((var_t *)v); /* may make its range texts */
    char *kept;
    if (keeping) {
        kept = strdup(keeping);
    } else {
        char *d = px_mca_var_format(v, &v->dflt);
        kept = px_asprintf("the default \"%s\" is kept", d ? d : "");
        free(d);
    }
    px_show_error("%s value \"%s\" for variable %s (%s)%s%s from %s; accepted: %s; %s",
                  out_of_range ? "out-of-range" : "invalid", text, v->full_name,
                  px_mca_var_type_name(v->type), strcmp(name, v->full_name) ? " via " : "",
                  strcmp(name, v->full_name) ? name : "", src ? src : "?", forms ? forms : "?",
                  kept ? kept : "");
    free(src);
    free(forms);
    free(kept);
}

/* Install the range [min, max] (texts parsed as values of `p`; NULL: open)
 * on primary `p`. Does not re-resolve. */
int px_mca_var_set_range_unlocked(var_t *p, const char *min, const char *max)
{
    if (!px_mca_var_has_range_type(p->type)) {
        px_show_error("px_mca_var_set_range: variable %s is of type %s; only int, unsigned, "
                      "size and double variables have a range",
                      p->full_name, px_mca_var_type_name(p->type));
        return PX_ERR_BAD_PARAM;
    }
    value_t lo = {0}, hi = {0};
    if ((min && !px_mca_var_parse(p, min, &lo)) || (max && !px_mca_var_parse(p, max, &hi))) {
        char *forms = px_mca_var_accepted_forms(p->type, NULL);
        px_show_error("px_mca_var_set_range: bound \"%s\" of variable %s (%s) does not parse; "
                      "accepted: %s",
                      (min && !px_mca_var_parse(p, min, &lo)) ? min : max, p->full_name,
                      px_mca_var_type_name(p->type), forms ? forms : "?");
        free(forms);
        return PX_ERR_BAD_PARAM;
    }
    if (min && max && compare_value(p, &lo, &hi) > 0) {
        px_show_error("px_mca_var_set_range: variable %s: the minimum \"%s\" is above the "
                      "maximum \"%s\"",
                      p->full_name, min, max);
        return PX_ERR_BAD_PARAM;
    }
    if ((min && compare_value(p, &p->dflt, &lo) < 0) ||
        (max && compare_value(p, &p->dflt, &hi) > 0)) {
        char *d = px_mca_var_format(p, &p->dflt);
        px_show_error("px_mca_var_set_range: the default \"%s\" of variable %s is outside its "
                      "own range %s..%s (a programming error in the code that registers it)",
                      d ? d : "?", p->full_name, min ? min : "", max ? max : "");
        free(d);
        return PX_ERR_BAD_PARAM;
    }
    /* Texts handed out earlier stay valid until finalize. The new ones are
     * made when first asked for (px_mca_var_range_texts): formatting every
     * range at registration was a tenth of px_init's instructions, for
     * texts only px_info and error messages read. */
    if (p->range_min || p->range_max) {
        char **old = realloc(p->old_range, (size_t)(p->n_old_range + 2) * sizeof(char *));
        if (!old)
            return PX_ERR_OUT_OF_RESOURCE;
        p->old_range = old;
        if (p->range_min)
            p->old_range[p->n_old_range++] = p->range_min;
        if (p->range_max)
            p->old_range[p->n_old_range++] = p->range_max;
    }
    p->range_min = p->range_max = NULL;
    p->has_min = min != NULL;
    p->has_max = max != NULL;
    p->rmin = lo;
    p->rmax = hi;
    return PX_SUCCESS;
}
