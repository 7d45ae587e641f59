/*
 * shm_segment_test: btl/shm's segment files: modes (folder 0700, file 0600),
 * attach with the right job id and key, refusal for another job's id, a
 * wrong key, a wrong size, and a folder open to other users.
 */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "components/btl/shm/shm.h"
#include "core/util/error.h"

static char top[64], dir[128], path[192];
static const size_t seg_size = 1 << 20;

static void setup(void)
{
    snprintf(top, sizeof top, "/dev/shm/plexus-segtest-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(top));
    snprintf(dir, sizeof dir, "%s/plexus-%u-jobA", top, (unsigned)getuid());
    snprintf(path, sizeof path, "%s/seg-0", dir);
}

static void teardown(void)
{
    unlink(path);
    rmdir(dir);
    rmdir(top);
}

START_TEST(create_modes_and_attach)
{
    char *base = NULL, *peer = NULL;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, "jobA", 42, 0, 2, 4096, &base),
                     PX_SUCCESS);
    struct stat st;
    ck_assert_int_eq(stat(dir, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0700);
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0600);
    ck_assert_int_eq((size_t)st.st_size, seg_size);
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 42, &peer), PX_SUCCESS);
    /* The same memory through both mappings. */
    base[seg_size - 1] = 'x';
    ck_assert_int_eq(peer[seg_size - 1], 'x');
    munmap(peer, seg_size);
    munmap(base, seg_size);
}
END_TEST

START_TEST(other_job_cannot_attach)
{
    char *base = NULL, *peer = (char *)1;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, "jobA", 42, 0, 2, 4096, &base),
                     PX_SUCCESS);
    /* A process of job B, even one that learnt the key, is refused. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobB", 42, &peer),
                     PX_ERR_BAD_PARAM);
    ck_assert_ptr_null(peer);
    /* The right job with a key that is not the one published. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 43, &peer),
                     PX_ERR_BAD_PARAM);
    /* A size that disagrees with the modex. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size / 2, "jobA", 42, &peer),
                     PX_ERR_BAD_PARAM);
    /* A job id that is a prefix of this one's. */
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "job", 42, &peer), PX_ERR_BAD_PARAM);
    munmap(base, seg_size);
}
END_TEST

START_TEST(not_a_segment)
{
    mkdir(dir, 0700);
    int fd = open(path, O_CREAT | O_RDWR, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(ftruncate(fd, (off_t)seg_size), 0);
    close(fd);
    char *peer = NULL;
    ck_assert_int_eq(px_btl_shm_segment_attach(path, seg_size, "jobA", 0, &peer), PX_ERR_BAD_PARAM);
}
END_TEST

START_TEST(open_folder_refused)
{
    ck_assert_int_eq(mkdir(dir, 0700), 0);
    ck_assert_int_eq(chmod(dir, 0777), 0);
    char *base = NULL;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, "jobA", 1, 0, 2, 4096, &base),
                     PX_ERR_BAD_PARAM);
    ck_assert_ptr_null(base);
    ck_assert_int_ne(access(path, F_OK), 0);
}
END_TEST

START_TEST(exclusive_create)
{
    char *a = NULL, *b = NULL;
    ck_assert_int_eq(px_btl_shm_segment_create(dir, path, seg_size, "jobA", 1, 0, 2, 4096, &a),
                     PX_SUCCESS);
    /* A second segment with the same name is an error, not a takeover. */
    ck_assert_int_ne(px_btl_shm_segment_create(dir, path, seg_size, "jobA", 2, 0, 2, 4096, &b),
                     PX_SUCCESS);
    ck_assert_ptr_null(b);
    munmap(a, seg_size);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("btl_shm_segment");
    TCase *tc = tcase_create("segment");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, create_modes_and_attach);
    tcase_add_test(tc, other_job_cannot_attach);
    tcase_add_test(tc, not_a_segment);
    tcase_add_test(tc, open_folder_refused);
    tcase_add_test(tc, exclusive_create);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
