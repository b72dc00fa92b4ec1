/* The code version recorded with every run (sweeps, baselines, imports): the commit of the
 * working directory's git checkout. */
#include "common/git.h"

#include <stdio.h>
#include <string.h>

void git_head_commit(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = popen("git rev-parse HEAD 2>/dev/null", "r");
    if (!f) return;
    char line[128] = "";
    if (fgets(line, sizeof line, f)) {
        /* only a plain hex hash: anything else (a warning on stdout) is no commit */
        size_t n = strspn(line, "0123456789abcdef");
        if (n >= 7 && (line[n] == '\n' || line[n] == 0)) snprintf(out, cap, "%.*s", (int)n, line);
    }
    pclose(f);
}
