/* Device-side template text shared by every generated kernel: the compact-row binary search,
 * the warp reductions and the leaky ReLU helpers, put in front of each kernel so it compiles alone. */
#ifndef TPL_TEMPLATES_H
#define TPL_TEMPLATES_H

/* The whole source of one kernel file: the device helpers, then the kernel text (caller frees). */
char *tpl_source(const char *kernel_text);

#endif
