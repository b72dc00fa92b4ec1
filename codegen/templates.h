/* Device-side template text shared by every generated kernel: the compact-row binary search,
 * the warp and row-group sums and the leaky ReLU helpers, put in front of each kernel that calls them. */
#ifndef TPL_TEMPLATES_H
#define TPL_TEMPLATES_H

/* The whole source of one kernel file, which compiles alone: the device helpers the kernel
 * text calls, then the text (caller frees). */
char *tpl_source(const char *kernel_text);

#endif
