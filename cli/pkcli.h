/* `explore perkernel`: the exact per-kernel optimum of a problem from its stored uniform-schedule
 * measurements, and the size of a design space once per-kernel choices are counted. */
#ifndef PK_PKCLI_H
#define PK_PKCLI_H

int pk_cli_main(int argc, char **argv);

#endif
