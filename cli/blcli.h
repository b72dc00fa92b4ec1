/* Command-line front ends of the baselines: `explore import` (a baseline CSV into the store),
 * `explore compare-baselines` (the table) and `explore baselines` (measure the cuBLAS layers). */
#ifndef BLCLI_BLCLI_H
#define BLCLI_BLCLI_H

int blcli_import_main(int argc, char **argv);
int blcli_compare_main(int argc, char **argv);
int blcli_baselines_main(int argc, char **argv);

#endif
