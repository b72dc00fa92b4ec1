/* `explore report [--db PATH] --out DIR [--gpu NAME] [--plots DIR] [--quiet]`: the command-line
 * front end of the paper-style figures (results/report.c draws them). */
#ifndef RP_RPCLI_H
#define RP_RPCLI_H

/* 0, 1 when the report failed, 2 on bad usage. */
int rp_cli_main(int argc, char **argv);

#endif
