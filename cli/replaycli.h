/* `explore replay`: search strategies replayed on a results store's recorded measurements (no GPU),
 * scored against the oracle and random search. */
#ifndef SR_REPLAYCLI_H
#define SR_REPLAYCLI_H

int sr_cli_replay(int argc, char **argv);

#endif
