/* Where model programs are: finding a model by name (models/NAME.rgnn) or path, and listing
 * the models of the model directory. */
#ifndef MD_MODELDIR_H
#define MD_MODELDIR_H

/* Path of a model: a name from the model directory or a path to a .rgnn file (caller
 * frees), or NULL. The model directory is $RGNN_MODELS, else ./models, else models/ next
 * to the executable's parent directory (build/explore -> models/). */
char *md_find(const char *name_or_path);
/* Comma-separated names of the models in the model directory (caller frees). */
char *md_list(void);
/* 1 when the argument names a file (has a '/' or ends in .rgnn) rather than a model name. */
int md_is_path(const char *s);

#endif
