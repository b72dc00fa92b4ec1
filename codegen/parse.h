/* Front end of the model language: parses and checks a .rgnn model program and
 * instantiates it, for given dims, as an inter-operator IR program (three-address form). */
#ifndef PS_PARSE_H
#define PS_PARSE_H

#include "codegen/ir.h"

/*
 * The language is documented in docs/model-language.md. The result:
 *  - every expression flattened into three-address statements on temporaries (`_t1`, ...);
 *  - variables in single-assignment form: assigning `e["att"]` again makes a new version
 *    (`att_2`), reads see the newest one; `+=` adds into the current one;
 *  - aggregations (`e.dst["h"] += x`, `n["h"] += x` inside n.incoming_edges()) in canonical
 *    DOM_EDGE form with out ACC_DST, accumulate=1 and a zero_init target;
 *  - the declared output with role OUTPUT; dead statements removed; ir_verify passes.
 * Errors (syntax, undefined names, slicing a weight by something that is not a type, shape
 * mismatches, unsupported constructs) come back as "file:line:col: message", never a crash.
 */
ir_program *ps_load_file(const char *path, const ir_dims *dims, rg_err *err);
/* Same from text in memory; `path` names it in messages and locates imports. */
ir_program *ps_load_string(const char *path, const char *text, const ir_dims *dims, rg_err *err);

/* Reads a whole text file (NULL with a message if it cannot). Caller frees. */
char *ps_read_file(const char *path, rg_err *err);

#endif
