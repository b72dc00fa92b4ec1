/* `explore perf-tables`: command-line front end of results/perftab (the tables of record of the
 * docs, written from committed results stores; `make perf-tables` runs it). */
#ifndef PTC_PTCLI_H
#define PTC_PTCLI_H

/* Exit statuses: 0 success, 1 failure writing the output, 2 bad usage or a store that cannot be read. */
int ptc_main(int argc, char **argv);

#endif
