/* Where model programs are: finding a model by name (models/NAME.rgnn) or path, and listing
 * the models of the model directory. */
#include "codegen/modeldir.h"
#include "common/util.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Candidate model directories, most specific first. Returns how many were written. */
static int model_dirs(char dirs[][1024], int max)
{
    int n = 0;
    const char *env = getenv("RGNN_MODELS");
    if (env && *env && n < max) snprintf(dirs[n++], 1024, "%s", env);
    if (n < max) snprintf(dirs[n++], 1024, "models");
    char exe[1024];
    ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (len > 0) {
        exe[len] = '\0';
        /* build/explore -> <repo>/models; build/tests/test_x -> <repo>/models */
        for (int up = 1; up <= 2 && n < max; up++) {
            char *slash = strrchr(exe, '/');
            if (!slash) break;
            *slash = '\0';
            char parent[1024];
            snprintf(parent, sizeof parent, "%s", exe);
            char *p2 = strrchr(parent, '/');
            if (!p2) break;
            *p2 = '\0';
            snprintf(dirs[n++], 1024, "%.1000s/models", parent);
        }
    }
    return n;
}

int md_is_path(const char *s)
{
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && !strcmp(s + n - 5, ".rgnn"));
}

char *md_find(const char *name_or_path)
{
    if (!name_or_path || !*name_or_path) return NULL;
    if (md_is_path(name_or_path)) return rg_file_exists(name_or_path) ? rg_xstrdup(name_or_path) : NULL;
    char dirs[4][1024];
    int n = model_dirs(dirs, 4);
    for (int i = 0; i < n; i++) {
        char *path = rg_xasprintf("%s/%s.rgnn", dirs[i], name_or_path);
        if (rg_file_exists(path)) return path;
        free(path);
    }
    return NULL;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

char *md_list(void)
{
    char dirs[4][1024];
    int n = model_dirs(dirs, 4);
    for (int i = 0; i < n; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d) continue;
        char *names[256];
        int count = 0;
        struct dirent *de;
        while ((de = readdir(d)) && count < 256) {
            size_t len = strlen(de->d_name);
            if (len > 5 && !strcmp(de->d_name + len - 5, ".rgnn") && strcmp(de->d_name, "lib.rgnn"))
                names[count++] = rg_xasprintf("%.*s", (int)(len - 5), de->d_name);
        }
        closedir(d);
        if (!count) continue;
        qsort(names, (size_t)count, sizeof *names, cmp_str);
        rg_str s = {0};
        for (int k = 0; k < count; k++) {
            rg_str_printf(&s, "%s%s", k ? ", " : "", names[k]);
            free(names[k]);
        }
        return s.s;
    }
    return rg_xstrdup("(no model directory found)");
}
