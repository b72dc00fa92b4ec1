/* `explore datasets list|info|fetch|export|bench`: what is registered and present, the
 * statistics of a loaded graph against the registry, downloads, exports and load benchmarks. */
#ifndef DSC_DSCLI_H
#define DSC_DSCLI_H

/* `explore datasets ...` */
int ds_cli_main(int argc, char **argv);

#endif
