/* The code version recorded with every run (sweeps, baselines, imports): the commit of the
 * working directory's git checkout. */
#ifndef GIT_GIT_H
#define GIT_GIT_H

#include <stddef.h>

/* `git rev-parse HEAD` of the current directory as hex, or "unknown" when git or a checkout is
 * missing (a run is still recorded, under that name). */
void git_head_commit(char *out, size_t cap);

#endif
