/* `explore replay`: search strategies replayed on a results store's recorded measurements (no GPU),
 * scored against the oracle and random search. */
#ifndef SR_REPLAYCLI_H
#define SR_REPLAYCLI_H

#include <stdio.h>
#include "common/util.h"

int sr_cli_replay(int argc, char **argv);
/* The replay section of docs/perf-tables.md for store db: `explore replay --db DB --strategy all
 * --budget-frac 0.1 --seed 1 --runs 10 --cm lodo`'s summary (per strategy, and per model and task)
 * and each problem's oracle, as markdown; the text depends only on the store and the path as
 * given. fit_db (NULL: none) adds `--fit-db fit_db`: models fitted on that other store without each
 * problem's dataset. -1 with err when the store cannot be replayed. */
int sr_cli_replay_markdown(const char *db, const char *fit_db, FILE *out, rg_err *err);

#endif
