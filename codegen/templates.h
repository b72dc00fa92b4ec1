/* Device-side template text shared by every generated kernel (the compact-row binary search, row-group
 * sums, activations, bfloat16 vector loads), put in front of each kernel that calls it. */
#ifndef TPL_TEMPLATES_H
#define TPL_TEMPLATES_H

/* The whole source of one kernel file, which compiles alone: the device helpers the kernel
 * text calls, then the text (caller frees). */
char *tpl_source(const char *kernel_text);

/* The first whole-identifier occurrence of `word` in generated text at or after `from` (a position
 * in `text`, which the test of the character before it may look behind), or NULL. */
const char *tpl_find_word(const char *text, const char *from, const char *word);

#endif
