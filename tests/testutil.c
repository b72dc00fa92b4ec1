/* Helpers shared by the test programs: where the shared real datasets are, whether a
 * GPU is present, temporary directories. Tests that need absent data skip, saying so. */
#include "tests/testutil.h"
#include "common/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *tu_shared_datasets(void)
{
    const char *env = getenv("RGNN_TEST_DATA");
    if (env && rg_file_exists(env)) return env;
    if (rg_file_exists("../shared/datasets/README.md")) return "../shared/datasets";
    return NULL;
}

char *tu_dataset_dir(const char *name)
{
    const char *root = tu_shared_datasets();
    if (!root) return NULL;
    char *p = rg_xasprintf("%s/%s", root, name);
    if (!rg_file_exists(p)) {
        free(p);
        return NULL;
    }
    return p;
}

char *tu_tmpdir(void)
{
    char tmpl[] = "/tmp/rgnn-test-XXXXXX";
    char *d = mkdtemp(tmpl);
    if (!d) RG_DIE("mkdtemp failed");
    return rg_xstrdup(d);
}

char *tu_write_file(const char *dir, const char *name, const char *text)
{
    char *p = rg_xasprintf("%s/%s", dir, name);
    FILE *f = fopen(p, "wb");
    if (!f) RG_DIE("cannot write %s", p);
    fputs(text, f);
    fclose(f);
    return p;
}
