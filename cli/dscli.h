/* `explore datasets list|info|fetch|export|bench`: what is registered and present, the
 * statistics of a loaded graph against the registry, downloads, exports and load benchmarks. */
#ifndef DS_DSCLI_H
#define DS_DSCLI_H

/* argv[0] is "datasets"; 0, 1 on failure, 2 on bad usage. */
int ds_cli_main(int argc, char **argv);

#endif
