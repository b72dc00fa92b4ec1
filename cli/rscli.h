/* `explore export`, `explore merge` and `explore compare`: command-line front ends of the
 * results store (option parsing, help texts, atomic output files, human-readable tables). */
#ifndef RS_RSCLI_H
#define RS_RSCLI_H

/* Exit statuses: 0 success, 1 failure (or regressions found by compare), 2 bad usage. */
int rs_cli_export(int argc, char **argv);
int rs_cli_merge(int argc, char **argv);
int rs_cli_compare(int argc, char **argv);
/* `explore prune --keep-latest-commit`: a store of record made small (rs_prune_superseded). */
int rs_cli_prune(int argc, char **argv);

#endif
