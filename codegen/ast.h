/* Syntax tree of the model language (the .rgnn files in models/), shared by the parser (parse.c) and
 * the checker that instantiates it as IR (elab.c). Every node keeps its file:line:col. */
#ifndef AST_H
#define AST_H

#include "common/util.h"

typedef struct ast_loc {
    const char *file;   /* owned by the ast_file */
    int line, col;
} ast_loc;

typedef enum ast_expr_kind {
    AST_NUM, AST_STR, AST_NAME, AST_ATTR, AST_INDEX, AST_CALL, AST_BINOP, AST_NEG
} ast_expr_kind;

/* The most levels one expression may have, both as parentheses (and brackets, call
 * arguments, unary '-') nested in the text and as operations nested in the tree (a chain
 * a + b + c is one level per operator). The parser refuses deeper input with a located
 * message, so that every recursive walk over an expression (the parser's own descent,
 * elab.c's evaluation, freeing) stays a few hundred frames deep, far from the stack's end. */
#define AST_MAX_DEPTH 256

typedef struct ast_expr {
    ast_expr_kind kind;
    ast_loc loc;
    int depth;               /* levels of this subtree, 1 for a leaf (<= AST_MAX_DEPTH) */
    double num;              /* AST_NUM */
    char *text;              /* AST_STR value, AST_NAME name, AST_ATTR attribute name */
    char op;                 /* AST_BINOP: + - * / */
    struct ast_expr *a, *b;  /* BINOP operands; ATTR/INDEX object (a) and key (b); NEG (a); CALL callee (a) */
    int nargs;
    struct ast_expr **args;  /* AST_CALL */
} ast_expr;

typedef enum ast_stmt_kind {
    AST_IMPORT, AST_INPUT, AST_WEIGHT, AST_OUTPUT, AST_DEF, AST_FOR, AST_ASSIGN, AST_EXPR
} ast_stmt_kind;

typedef struct ast_block {
    int n, cap;
    struct ast_stmt **items;
} ast_block;

typedef struct ast_stmt {
    ast_stmt_kind kind;
    ast_loc loc;
    char *name;           /* IMPORT module, INPUT/WEIGHT/DEF name, FOR loop variable */
    /* WEIGHT: index kind ("etype", "ntype" or NULL) and shape; INPUT: shape */
    char *widx;
    int per_head;         /* WEIGHT: `heads (...)` */
    int nshape;
    ast_expr *shape[2];
    /* DEF */
    int nparams;
    char **params;
    ast_loc *param_locs;
    /* FOR: iterable (a call like g.edges()); ASSIGN: target and value; OUTPUT/EXPR: value */
    ast_expr *iter, *target, *value;
    char assign_op;       /* '=', '+', '-', '*', '/' for =, +=, -=, *=, /= */
    ast_block body;       /* DEF, FOR */
} ast_stmt;

typedef struct ast_file {
    char *path;
    ast_block top;
} ast_file;

/* Parses one file's text (path names it in messages). NULL with "file:line:col: ..." on error. */
ast_file *ast_parse(const char *path, const char *text, rg_err *err);
void ast_free(ast_file *f);

#endif
