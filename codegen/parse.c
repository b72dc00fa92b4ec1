/* Lexer and recursive-descent parser of the model language: Python-like indentation,
 * declarations, for loops over the graph, assignments and calls, into the tree of ast.h. */
#include "codegen/ast.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ tokens */

typedef enum tok_kind { T_NAME, T_NUM, T_STR, T_OP, T_NEWLINE, T_INDENT, T_DEDENT, T_EOF } tok_kind;

typedef struct token {
    tok_kind kind;
    int line, col;
    char text[64];      /* NAME, OP, and the spelling of NUM for messages */
    char *str;          /* STR value (owned) */
    double num;
} token;

typedef struct lexer {
    const char *path, *src;
    size_t pos;
    int line, col;
    int depth;          /* open ( and [: newlines inside them do not end a statement */
    int indents[64], nindent;
    int ntok, cap;
    token *toks;
} lexer;

static token *push_tok(lexer *lx, tok_kind k, int line, int col)
{
    if (lx->ntok == lx->cap) {
        lx->cap = lx->cap ? 2 * lx->cap : 256;
        lx->toks = rg_xrealloc(lx->toks, (size_t)lx->cap * sizeof *lx->toks);
    }
    token *t = &lx->toks[lx->ntok++];
    memset(t, 0, sizeof *t);
    t->kind = k;
    t->line = line;
    t->col = col;
    return t;
}

static int lex_error(lexer *lx, int line, int col, rg_err *err, const char *what)
{
    return rg_errf(err, "%s:%d:%d: %s", lx->path, line, col, what);
}

static char peekc(const lexer *lx, size_t ahead) { return lx->src[lx->pos + ahead]; }

static void advance(lexer *lx)
{
    if (lx->src[lx->pos] == '\n') {
        lx->line++;
        lx->col = 1;
    } else {
        lx->col++;
    }
    lx->pos++;
}

/* At the start of a line: measures indentation and emits INDENT/DEDENT; skips blank and
 * comment-only lines. Returns 1 when the file ended, -1 on error. */
static int lex_line_start(lexer *lx, rg_err *err)
{
    for (;;) {
        int width = 0;
        while (peekc(lx, 0) == ' ') { width++; advance(lx); }
        if (peekc(lx, 0) == '\t') return lex_error(lx, lx->line, lx->col, err, "tab in indentation: indent with spaces");
        char c = peekc(lx, 0);
        if (c == '#') while (peekc(lx, 0) && peekc(lx, 0) != '\n') advance(lx);
        c = peekc(lx, 0);
        if (c == '\r') { advance(lx); c = peekc(lx, 0); }
        if (c == '\n') { advance(lx); continue; }
        if (c == '\0') return 1;
        int top = lx->indents[lx->nindent - 1];
        if (width > top) {
            if (lx->nindent == (int)(sizeof lx->indents / sizeof lx->indents[0]))
                return lex_error(lx, lx->line, lx->col, err, "nesting too deep");
            lx->indents[lx->nindent++] = width;
            push_tok(lx, T_INDENT, lx->line, 1);
        }
        while (width < lx->indents[lx->nindent - 1]) {
            lx->nindent--;
            push_tok(lx, T_DEDENT, lx->line, lx->col);
        }
        if (width != lx->indents[lx->nindent - 1])
            return lex_error(lx, lx->line, lx->col, err, "this line's indentation matches no enclosing block");
        return 0;
    }
}

static int lex_string(lexer *lx, rg_err *err)
{
    char quote = peekc(lx, 0);
    int line = lx->line, col = lx->col;
    advance(lx);
    rg_str s = {0};
    while (peekc(lx, 0) != quote) {
        if (peekc(lx, 0) == '\n' || peekc(lx, 0) == '\0') {
            rg_str_free(&s);
            return lex_error(lx, line, col, err, "string is not closed on its line");
        }
        rg_str_putc(&s, peekc(lx, 0));
        advance(lx);
    }
    advance(lx);
    token *t = push_tok(lx, T_STR, line, col);
    t->str = s.s ? s.s : rg_xstrdup("");
    snprintf(t->text, sizeof t->text, "%c%.60s%c", quote, t->str, quote);
    return 0;
}

/* Whether the spelling [start, end) has a nonzero digit before its exponent. */
static int nonzero_mantissa(const char *start, const char *end)
{
    for (const char *p = start; p < end && *p != 'e' && *p != 'E'; p++)
        if (*p >= '1' && *p <= '9') return 1;
    return 0;
}

/* Constants become C literals of the generated kernels: one that overflows a double would
 * be emitted as `inf`, which nvcc rejects, and one that underflows would silently be 0. */
static int lex_number(lexer *lx, rg_err *err)
{
    int line = lx->line, col = lx->col;
    const char *start = lx->src + lx->pos;
    char *end;
    errno = 0;
    double v = strtod(start, &end);
    if (end == start) return lex_error(lx, line, col, err, "malformed number");
    if (isalpha((unsigned char)*end) || *end == '_') return lex_error(lx, line, col, err, "malformed number");
    if (!isfinite(v))
        return lex_error(lx, line, col, err, "number too large: constants must be finite (at most about 1.8e308)");
    if (errno == ERANGE && v == 0 && nonzero_mantissa(start, end))
        return lex_error(lx, line, col, err, "number too small: it would round to 0 (at least about 2.2e-308)");
    token *t = push_tok(lx, T_NUM, line, col);
    t->num = v;
    snprintf(t->text, sizeof t->text, "%.*s", (int)(end - start) < 60 ? (int)(end - start) : 60, start);
    while (lx->src + lx->pos < end) advance(lx);
    return 0;
}

static int lex_op(lexer *lx, rg_err *err)
{
    int line = lx->line, col = lx->col;
    char c = peekc(lx, 0), d = peekc(lx, 1);
    static const char singles[] = "()[],:.=+-*/";
    if (!strchr(singles, c) || c == '\0') {
        char msg[64];
        snprintf(msg, sizeof msg, isprint((unsigned char)c) ? "unexpected character '%c'" : "unexpected byte 0x%02x",
                 isprint((unsigned char)c) ? c : (unsigned char)c);
        return lex_error(lx, line, col, err, msg);
    }
    token *t = push_tok(lx, T_OP, line, col);
    t->text[0] = c;
    advance(lx);
    if (d == '=' && strchr("+-*/", c)) {
        t->text[1] = '=';
        advance(lx);
    }
    if (c == '(' || c == '[') lx->depth++;
    if ((c == ')' || c == ']') && lx->depth > 0) lx->depth--;
    return 0;
}

static int lex_all(lexer *lx, rg_err *err)
{
    lx->line = lx->col = 1;
    lx->indents[0] = 0;
    lx->nindent = 1;
    int r = lex_line_start(lx, err);
    if (r < 0) return -1;
    while (r == 0) {
        char c = peekc(lx, 0);
        if (c == '\0') break;
        if (c == ' ' || c == '\r' || (c == '\t' && lx->depth == 0)) { advance(lx); continue; }
        if (c == '\t') { advance(lx); continue; }
        if (c == '#') { while (peekc(lx, 0) && peekc(lx, 0) != '\n') advance(lx); continue; }
        if (c == '\\' && peekc(lx, 1) == '\n') { advance(lx); advance(lx); continue; }
        if (c == '\n') {
            if (lx->depth > 0) { advance(lx); continue; }
            push_tok(lx, T_NEWLINE, lx->line, lx->col);
            advance(lx);
            if ((r = lex_line_start(lx, err)) < 0) return -1;
            continue;
        }
        int rc;
        if (isalpha((unsigned char)c) || c == '_') {
            token *t = push_tok(lx, T_NAME, lx->line, lx->col);
            size_t n = 0;
            while (isalnum((unsigned char)peekc(lx, 0)) || peekc(lx, 0) == '_') {
                if (n + 1 >= sizeof t->text) return lex_error(lx, t->line, t->col, err, "name longer than 63 characters");
                t->text[n++] = peekc(lx, 0);
                advance(lx);
            }
            continue;
        }
        if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)peekc(lx, 1)))) rc = lex_number(lx, err);
        else if (c == '"' || c == '\'') rc = lex_string(lx, err);
        else rc = lex_op(lx, err);
        if (rc < 0) return -1;
    }
    if (lx->ntok > 0 && lx->toks[lx->ntok - 1].kind != T_NEWLINE && lx->toks[lx->ntok - 1].kind != T_DEDENT)
        push_tok(lx, T_NEWLINE, lx->line, lx->col);
    while (lx->nindent > 1) {
        lx->nindent--;
        push_tok(lx, T_DEDENT, lx->line, lx->col);
    }
    push_tok(lx, T_EOF, lx->line, lx->col);
    return 0;
}

/* ------------------------------------------------------------------ parser */

typedef struct parser {
    lexer lx;
    int pos;
    int nest;           /* parse_expr / unary '-' calls under way: the descent's depth */
    const char *path;   /* owned by the ast_file */
    rg_err *err;
} parser;

static token *cur(parser *ps) { return &ps->lx.toks[ps->pos]; }

static const char *tok_desc(const token *t)
{
    switch (t->kind) {
    case T_NEWLINE: return "end of line";
    case T_INDENT: return "an indented block";
    case T_DEDENT: return "end of block";
    case T_EOF: return "end of file";
    default: return t->text;
    }
}

static int syntax_error(parser *ps, const token *t, const char *expected)
{
    return rg_errf(ps->err, "%s:%d:%d: expected %s, found '%s'", ps->path, t->line, t->col, expected, tok_desc(t));
}

static int is_op(const token *t, const char *op) { return t->kind == T_OP && !strcmp(t->text, op); }
static int is_name(const token *t, const char *n) { return t->kind == T_NAME && !strcmp(t->text, n); }

static int expect_op(parser *ps, const char *op, const char *expected)
{
    if (!is_op(cur(ps), op)) return syntax_error(ps, cur(ps), expected);
    ps->pos++;
    return 0;
}

static ast_loc loc_of(parser *ps, const token *t) { return (ast_loc){ps->path, t->line, t->col}; }

static ast_expr *new_expr(ast_expr_kind k, ast_loc loc)
{
    ast_expr *e = rg_xcalloc(1, sizeof *e);
    e->kind = k;
    e->loc = loc;
    e->depth = 1;
    return e;
}

static void free_expr(ast_expr *e)
{
    if (!e) return;
    free(e->text);
    free_expr(e->a);
    free_expr(e->b);
    for (int i = 0; i < e->nargs; i++) free_expr(e->args[i]);
    free(e->args);
    free(e);
}

static ast_expr *parse_expr(parser *ps);

static int imax(int a, int b) { return a > b ? a : b; }

/* Sets n's depth from its children, which the loops of parse_binary and parse_postfix build
 * without recursing (a + b + ... is as deep as it is long); refuses n beyond AST_MAX_DEPTH.
 * `at` locates the operation that went too deep. Frees n on error. */
static ast_expr *bounded(parser *ps, ast_expr *n, const token *at)
{
    int d = 0;
    if (n->a) d = n->a->depth;
    if (n->b) d = imax(d, n->b->depth);
    for (int i = 0; i < n->nargs; i++) d = imax(d, n->args[i]->depth);
    n->depth = d + 1;
    if (n->depth <= AST_MAX_DEPTH) return n;
    rg_errf(ps->err, "%s:%d:%d: expression too long: more than %d operations nested or chained in it; "
            "split it over several statements", ps->path, at->line, at->col, AST_MAX_DEPTH);
    free_expr(n);
    return NULL;
}

/* Counts one level of the descent, at the first token of the sub-expression that starts
 * it; refuses input nested beyond AST_MAX_DEPTH before the recursion into it could exhaust
 * the stack. Balanced by leave(). */
static int enter(parser *ps)
{
    if (++ps->nest <= AST_MAX_DEPTH) return 0;
    const token *t = cur(ps);
    return rg_errf(ps->err, "%s:%d:%d: expression nested too deeply: more than %d levels of parentheses, "
                   "brackets, calls or unary '-'", ps->path, t->line, t->col, AST_MAX_DEPTH);
}

static void leave(parser *ps) { ps->nest--; }

/* A literal 0 as written (0, 0.0, -0, (0)): dividing by it is refused at parse time. */
static int is_literal_zero(const ast_expr *e)
{
    while (e->kind == AST_NEG) e = e->a;
    return e->kind == AST_NUM && e->num == 0;
}

static int division_by_zero(parser *ps, const token *op)
{
    return rg_errf(ps->err, "%s:%d:%d: division by zero (the divisor is a literal 0)", ps->path, op->line, op->col);
}

static ast_expr *parse_atom(parser *ps)
{
    token *t = cur(ps);
    ast_expr *e = NULL;
    if (t->kind == T_NUM) {
        e = new_expr(AST_NUM, loc_of(ps, t));
        e->num = t->num;
    } else if (t->kind == T_STR) {
        e = new_expr(AST_STR, loc_of(ps, t));
        e->text = rg_xstrdup(t->str);
    } else if (t->kind == T_NAME) {
        e = new_expr(AST_NAME, loc_of(ps, t));
        e->text = rg_xstrdup(t->text);
    } else if (is_op(t, "(")) {
        ps->pos++;
        e = parse_expr(ps);
        if (!e) return NULL;
        if (expect_op(ps, ")", "')' closing the parenthesis") < 0) {
            free_expr(e);
            return NULL;
        }
        return e;
    } else {
        syntax_error(ps, t, "a value (name, number, string or '(')");
        return NULL;
    }
    ps->pos++;
    return e;
}

static int parse_args(parser *ps, ast_expr *call)
{
    if (is_op(cur(ps), ")")) { ps->pos++; return 0; }
    for (;;) {
        ast_expr *a = parse_expr(ps);
        if (!a) return -1;
        call->args = rg_xrealloc(call->args, (size_t)(call->nargs + 1) * sizeof *call->args);
        call->args[call->nargs++] = a;
        if (is_op(cur(ps), ",")) { ps->pos++; continue; }
        return expect_op(ps, ")", "',' or ')' in the argument list");
    }
}

static ast_expr *parse_postfix(parser *ps)
{
    ast_expr *e = parse_atom(ps);
    while (e) {
        token *t = cur(ps);
        ast_expr *n = NULL;
        if (is_op(t, "(")) {
            ps->pos++;
            n = new_expr(AST_CALL, e->loc);
            n->a = e;
            if (parse_args(ps, n) < 0) { free_expr(n); return NULL; }
            if (!(n = bounded(ps, n, t))) return NULL;
        } else if (is_op(t, "[")) {
            ps->pos++;
            n = new_expr(AST_INDEX, e->loc);   /* expressions are located where they start */
            n->a = e;
            n->b = parse_expr(ps);
            if (!n->b || expect_op(ps, "]", "']' closing the subscript") < 0) { free_expr(n); return NULL; }
            if (!(n = bounded(ps, n, t))) return NULL;
        } else if (is_op(t, ".")) {
            ps->pos++;
            if (cur(ps)->kind != T_NAME) { syntax_error(ps, cur(ps), "an attribute name after '.'"); free_expr(e); return NULL; }
            n = new_expr(AST_ATTR, e->loc);
            n->a = e;
            n->text = rg_xstrdup(cur(ps)->text);
            ps->pos++;
            if (!(n = bounded(ps, n, t))) return NULL;
        } else {
            return e;
        }
        e = n;
    }
    return NULL;
}

static ast_expr *parse_unary(parser *ps)
{
    if (is_op(cur(ps), "-")) {
        token *t = cur(ps);
        ps->pos++;
        if (enter(ps) < 0) return NULL;
        ast_expr *n = new_expr(AST_NEG, loc_of(ps, t));
        n->a = parse_unary(ps);
        leave(ps);
        if (!n->a) { free_expr(n); return NULL; }
        return bounded(ps, n, t);
    }
    return parse_postfix(ps);
}

static ast_expr *parse_binary(parser *ps, int level)
{
    const char *ops = level == 0 ? "+-" : "*/";
    ast_expr *l = level == 0 ? parse_binary(ps, 1) : parse_unary(ps);
    while (l) {
        token *t = cur(ps);
        if (t->kind != T_OP || t->text[1] != '\0' || !strchr(ops, t->text[0])) return l;
        ps->pos++;
        ast_expr *n = new_expr(AST_BINOP, l->loc);
        n->op = t->text[0];
        n->a = l;
        n->b = level == 0 ? parse_binary(ps, 1) : parse_unary(ps);
        if (!n->b) { free_expr(n); return NULL; }
        if (n->op == '/' && is_literal_zero(n->b)) {
            division_by_zero(ps, t);
            free_expr(n);
            return NULL;
        }
        l = bounded(ps, n, t);
    }
    return NULL;
}

static ast_expr *parse_expr(parser *ps)
{
    if (enter(ps) < 0) return NULL;
    ast_expr *e = parse_binary(ps, 0);
    leave(ps);
    return e;
}

/* ------------------------------------------------------------------ statements */

static void free_block(ast_block *b);

static void free_stmt(ast_stmt *s)
{
    if (!s) return;
    free(s->name);
    free(s->widx);
    for (int i = 0; i < s->nshape; i++) free_expr(s->shape[i]);
    for (int i = 0; i < s->nparams; i++) free(s->params[i]);
    free(s->params);
    free(s->param_locs);
    free_expr(s->iter);
    free_expr(s->target);
    free_expr(s->value);
    free_block(&s->body);
    free(s);
}

static void free_block(ast_block *b)
{
    for (int i = 0; i < b->n; i++) free_stmt(b->items[i]);
    free(b->items);
    b->items = NULL;
    b->n = b->cap = 0;
}

static void block_add(ast_block *b, ast_stmt *s)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 8;
        b->items = rg_xrealloc(b->items, (size_t)b->cap * sizeof *b->items);
    }
    b->items[b->n++] = s;
}

static int expect_newline(parser *ps)
{
    if (cur(ps)->kind != T_NEWLINE) return syntax_error(ps, cur(ps), "end of line");
    ps->pos++;
    return 0;
}

static ast_stmt *parse_stmt(parser *ps);

/* ':' NEWLINE INDENT stmt+ DEDENT */
static int parse_block(parser *ps, ast_block *b, const char *what)
{
    char expected[96];
    snprintf(expected, sizeof expected, "':' ending the %s header", what);
    if (expect_op(ps, ":", expected) < 0) return -1;
    if (cur(ps)->kind != T_NEWLINE) return syntax_error(ps, cur(ps), "a new line after ':' (blocks are indented lines)");
    ps->pos++;
    if (cur(ps)->kind != T_INDENT) return syntax_error(ps, cur(ps), "an indented block");
    ps->pos++;
    while (cur(ps)->kind != T_DEDENT && cur(ps)->kind != T_EOF) {
        ast_stmt *s = parse_stmt(ps);
        if (!s) return -1;
        block_add(b, s);
    }
    if (cur(ps)->kind == T_DEDENT) ps->pos++;
    return 0;
}

static ast_stmt *new_stmt(parser *ps, ast_stmt_kind k, const token *t)
{
    ast_stmt *s = rg_xcalloc(1, sizeof *s);
    s->kind = k;
    s->loc = loc_of(ps, t);
    return s;
}

static int take_name(parser *ps, char **out, const char *expected)
{
    if (cur(ps)->kind != T_NAME) return syntax_error(ps, cur(ps), expected);
    *out = rg_xstrdup(cur(ps)->text);
    ps->pos++;
    return 0;
}

/* '(' expr [',' expr] ')' */
static int parse_shape(parser *ps, ast_stmt *s)
{
    if (expect_op(ps, "(", "'(' starting a shape such as (IN, OUT)") < 0) return -1;
    for (;;) {
        if (s->nshape == 2) return syntax_error(ps, cur(ps), "')' (shapes have one or two sizes)");
        if (!(s->shape[s->nshape] = parse_expr(ps))) return -1;
        s->nshape++;
        if (is_op(cur(ps), ",")) { ps->pos++; continue; }
        return expect_op(ps, ")", "',' or ')' in the shape");
    }
}

static ast_stmt *parse_weight(parser *ps, ast_stmt *s)
{
    if (take_name(ps, &s->name, "the weight's name") < 0) return NULL;
    if (is_op(cur(ps), "[")) {
        ps->pos++;
        if (!is_name(cur(ps), "etype") && !is_name(cur(ps), "ntype")) {
            syntax_error(ps, cur(ps), "'etype' or 'ntype' (the type that slices the weight)");
            return NULL;
        }
        s->widx = rg_xstrdup(cur(ps)->text);
        ps->pos++;
        if (expect_op(ps, "]", "']' after the weight's type index") < 0) return NULL;
    }
    if (expect_op(ps, ":", "':' before the weight's shape") < 0) return NULL;
    if (is_name(cur(ps), "heads")) {
        s->per_head = 1;
        ps->pos++;
    }
    if (parse_shape(ps, s) < 0 || expect_newline(ps) < 0) return NULL;
    return s;
}

static ast_stmt *parse_def(parser *ps, ast_stmt *s)
{
    if (take_name(ps, &s->name, "the function's name") < 0) return NULL;
    if (expect_op(ps, "(", "'(' starting the parameter list") < 0) return NULL;
    while (!is_op(cur(ps), ")")) {
        s->params = rg_xrealloc(s->params, (size_t)(s->nparams + 1) * sizeof *s->params);
        s->param_locs = rg_xrealloc(s->param_locs, (size_t)(s->nparams + 1) * sizeof *s->param_locs);
        s->param_locs[s->nparams] = loc_of(ps, cur(ps));
        if (take_name(ps, &s->params[s->nparams], "a parameter name") < 0) return NULL;
        s->nparams++;
        if (is_op(cur(ps), ",")) ps->pos++;
        else if (!is_op(cur(ps), ")")) { syntax_error(ps, cur(ps), "',' or ')' in the parameter list"); return NULL; }
    }
    ps->pos++;
    if (parse_block(ps, &s->body, "def") < 0) return NULL;
    return s;
}

static ast_stmt *parse_for(parser *ps, ast_stmt *s)
{
    if (take_name(ps, &s->name, "the loop variable after 'for'") < 0) return NULL;
    if (!is_name(cur(ps), "in")) { syntax_error(ps, cur(ps), "'in' after the loop variable"); return NULL; }
    ps->pos++;
    if (!(s->iter = parse_expr(ps))) return NULL;
    if (parse_block(ps, &s->body, "for") < 0) return NULL;
    return s;
}

static const char *const UNSUPPORTED[] = {
    "while", "if", "elif", "else", "return", "class", "lambda", "with", "try", "except", "break",
    "continue", "pass", "global", "nonlocal", "yield", "from", "del", "assert", "raise", "async",
    "await", "and", "or", "not", "is", NULL,
};

static int unsupported_keyword(parser *ps, const token *t)
{
    for (int i = 0; UNSUPPORTED[i]; i++)
        if (is_name(t, UNSUPPORTED[i]))
            return rg_errf(ps->err,
                           "%s:%d:%d: unsupported construct '%s': the language has declarations, "
                           "for loops over the graph, assignments and function calls only",
                           ps->path, t->line, t->col, t->text);
    return 0;
}

static ast_stmt *parse_assign_or_expr(parser *ps, const token *start)
{
    ast_expr *lhs = parse_expr(ps);
    if (!lhs) return NULL;
    token *t = cur(ps);
    ast_stmt *s;
    if (t->kind == T_OP && (!strcmp(t->text, "=") || (t->text[1] == '=' && strchr("+-*/", t->text[0])))) {
        ps->pos++;
        s = new_stmt(ps, AST_ASSIGN, start);
        s->target = lhs;
        s->assign_op = t->text[0];
        if (!(s->value = parse_expr(ps))) { free_stmt(s); return NULL; }
        if (s->assign_op == '/' && is_literal_zero(s->value)) {
            division_by_zero(ps, t);
            free_stmt(s);
            return NULL;
        }
    } else {
        s = new_stmt(ps, AST_EXPR, start);
        s->value = lhs;
    }
    if (expect_newline(ps) < 0) { free_stmt(s); return NULL; }
    return s;
}

static ast_stmt *parse_stmt(parser *ps)
{
    token *t = cur(ps);
    if (t->kind == T_INDENT) { syntax_error(ps, t, "a statement at the block's indentation"); return NULL; }
    if (t->kind != T_NAME && t->kind != T_OP && t->kind != T_NUM && t->kind != T_STR) {
        syntax_error(ps, t, "a statement");
        return NULL;
    }
    if (unsupported_keyword(ps, t) < 0) return NULL;
    ast_stmt *s = NULL, *r = NULL;
    if (is_name(t, "import")) {
        ps->pos++;
        s = new_stmt(ps, AST_IMPORT, t);
        r = take_name(ps, &s->name, "a module name after 'import'") == 0 && expect_newline(ps) == 0 ? s : NULL;
    } else if (is_name(t, "input") && ps->lx.toks[ps->pos + 1].kind == T_NAME) {
        ps->pos++;
        s = new_stmt(ps, AST_INPUT, t);
        r = take_name(ps, &s->name, "the input's name") == 0
                    && expect_op(ps, ":", "':' before the input's shape") == 0 && parse_shape(ps, s) == 0
                    && expect_newline(ps) == 0
                ? s : NULL;
    } else if (is_name(t, "weight") && ps->lx.toks[ps->pos + 1].kind == T_NAME) {
        ps->pos++;
        s = new_stmt(ps, AST_WEIGHT, t);
        r = parse_weight(ps, s);
    } else if (is_name(t, "output") && ps->lx.toks[ps->pos + 1].kind != T_OP) {
        ps->pos++;
        s = new_stmt(ps, AST_OUTPUT, t);
        r = (s->value = parse_expr(ps)) && expect_newline(ps) == 0 ? s : NULL;
    } else if (is_name(t, "def")) {
        ps->pos++;
        s = new_stmt(ps, AST_DEF, t);
        r = parse_def(ps, s);
    } else if (is_name(t, "for")) {
        ps->pos++;
        s = new_stmt(ps, AST_FOR, t);
        r = parse_for(ps, s);
    } else {
        return parse_assign_or_expr(ps, t);
    }
    if (!r) free_stmt(s);
    return r;
}

ast_file *ast_parse(const char *path, const char *text, rg_err *err)
{
    ast_file *f = rg_xcalloc(1, sizeof *f);
    f->path = rg_xstrdup(path);
    parser ps = {.path = f->path, .err = err};
    ps.lx.path = f->path;
    ps.lx.src = text;
    int ok = lex_all(&ps.lx, err) == 0;
    while (ok && cur(&ps)->kind != T_EOF) {
        if (cur(&ps)->kind == T_DEDENT || cur(&ps)->kind == T_NEWLINE) { ps.pos++; continue; }
        ast_stmt *s = parse_stmt(&ps);
        if (!s) ok = 0;
        else block_add(&f->top, s);
    }
    for (int i = 0; i < ps.lx.ntok; i++) free(ps.lx.toks[i].str);
    free(ps.lx.toks);
    if (!ok) {
        ast_free(f);
        return NULL;
    }
    return f;
}

void ast_free(ast_file *f)
{
    if (!f) return;
    free_block(&f->top);
    free(f->path);
    free(f);
}
