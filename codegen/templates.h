/* Device-side template code shared by every generated kernel: the compact-row binary
 * search, warp reductions and atomics, pasted into each translation unit so it compiles alone. */
#ifndef KTPL_TEMPLATES_H
#define KTPL_TEMPLATES_H

/* Text of the device helpers (CUDA C). Generated sources start with it. */
extern const char ktpl_prelude[];

#endif
