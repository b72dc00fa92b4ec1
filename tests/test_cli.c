/* The command-line layer: the shared option parser (common/opts), and the same bad problem given
 * to every command that takes one (run, gen, ir, the sweep, a plan sweep, pick, baselines) gets
 * exit status 2, one line on stderr and no store written. */
#include "tests/testutil.h"
#include "common/opts.h"
#include "common/util.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the parser ---- */

typedef struct parsed {
    const char *name, *pos[2];
    int n, flag, dims[2];
    double x;
} parsed;

static void table(ro_cmd *c, parsed *p)
{
    memset(p, 0, sizeof *p);
    p->n = 7;
    ro_init(c, "explore t", "usage: explore t [options] [A [B]]\n", NULL);
    ro_add(c, (ro_opt){.name = "name", .arg = "S", .kind = RO_STR, .dst = &p->name, .help = "a string"});
    ro_add(c, (ro_opt){.name = "count", .arg = "N", .kind = RO_INT, .dst = &p->n, .help = "1 to 10", .lo = 1, .hi = 10});
    ro_add(c, (ro_opt){.name = "ratio", .arg = "X", .kind = RO_REAL, .dst = &p->x, .help = "0 to 1", .lo = 0, .hi = 1});
    ro_add(c, (ro_opt){.name = "dims", .arg = "IN,OUT", .kind = RO_DIMS, .dst = p->dims, .help = "dims"});
    ro_add(c, (ro_opt){.name = "verbose", .kind = RO_FLAG, .dst = &p->flag, .help = "a flag"});
    ro_positional(c, p->pos, 2);
}

/* ro_parse with stderr captured: the status and the message (caller frees). */
static int parse_capture(int argc, char **argv, parsed *p, ro_cmd *c, char **msg)
{
    char *dir = tu_tmpdir(), *path = rg_xasprintf("%s/err", dir);
    fflush(stderr);
    int saved = dup(2), fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    table(c, p);
    int rc = ro_parse(c, argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved), close(fd);
    *msg = tu_read_file(path, NULL);
    free(path);
    tu_rm_tree(dir);
    return rc;
}

static void expect_bad(char **argv, int argc, const char *what)
{
    parsed p;
    ro_cmd c;
    char *msg;
    assert_int_equal(parse_capture(argc, argv, &p, &c, &msg), RO_BAD);
    if (!strstr(msg, what)) fail_msg("expected '%s' in: %s", what, msg);
    assert_non_null(strchr(msg, '\n'));
    assert_int_equal(strchr(msg, '\n')[1], 0);   /* one line */
    assert_int_equal(strncmp(msg, "explore t: ", 11), 0);
    free(msg);
}

static void test_parser(void **state)
{
    (void)state;
    parsed p;
    ro_cmd c;
    char *msg;
    char *ok[] = {"t", "--name=x", "A", "--count", "3", "--ratio=0.5", "--dims", "32,128", "--verbose", "B"};
    assert_int_equal(parse_capture(10, ok, &p, &c, &msg), RO_OK);
    assert_string_equal(msg, "");
    free(msg);
    assert_string_equal(p.name, "x");
    assert_int_equal(p.n, 3);
    assert_int_equal(p.flag, 1);
    assert_int_equal(p.dims[0] * 1000 + p.dims[1], 32128);
    assert_int_equal(c.npos, 2);
    assert_string_equal(p.pos[1], "B");
    assert_float_equal(p.x, 0.5, 0);
    assert_true(ro_given(&c, "count") && ro_given(&c, "name"));
    char *one[] = {"t", "--dims", "48"};
    assert_int_equal(parse_capture(3, one, &p, &c, &msg), RO_OK);
    free(msg);
    assert_int_equal(p.dims[0] * 1000 + p.dims[1], 48048);
    assert_false(ro_given(&c, "count"));
    assert_int_equal(p.n, 7);   /* the default stays */
    char *negative[] = {"t", "--count", "-1"};
    expect_bad(negative, 3, "--count: expects an integer from 1 to 10 (got '-1')");
    char *typo[] = {"t", "--cuont", "3"};
    expect_bad(typo, 3, "unknown option '--cuont' (did you mean --count?)");
    char *twice[] = {"t", "--count", "3", "--count=4"};
    expect_bad(twice, 4, "--count is given twice");
    char *missing[] = {"t", "--name", "--count", "3"};
    expect_bad(missing, 4, "--name needs a value");
    char *last[] = {"t", "--name"};
    expect_bad(last, 2, "--name needs a value");
    char *flagval[] = {"t", "--verbose=yes"};
    expect_bad(flagval, 2, "--verbose takes no value");
    char *extra[] = {"t", "A", "B", "C"};
    expect_bad(extra, 4, "unexpected argument 'C'");
    char *range[] = {"t", "--ratio", "2"};
    expect_bad(range, 3, "--ratio: expects a number from 0 to 1");
    char *dims[] = {"t", "--dims", "4097"};
    expect_bad(dims, 3, "dims must be IN,OUT or N, each 1 to 4096 (got '4097')");
    /* the help comes from the table, whatever else is on the line */
    char *help[] = {"t", "--bogus", "-h"};
    fflush(stdout);
    int saved = dup(1), null = open("/dev/null", O_WRONLY);
    dup2(null, 1);
    int rc = parse_capture(3, help, &p, &c, &msg);
    fflush(stdout);
    dup2(saved, 1);
    close(saved), close(null);
    assert_int_equal(rc, RO_HELP);
    assert_int_equal(ro_exit(rc), 0);
    free(msg);
}

static void test_shared_limits(void **state)
{
    (void)state;
    rg_err err;
    int in, out;
    assert_int_equal(ro_parse_dims("4096x16", &in, &out, &err), 0);
    assert_int_equal(in * 100 + out, 409616);
    assert_int_equal(ro_parse_dims("24", &in, &out, &err), 0);
    assert_int_equal(out, 24);
    const char *bad[] = {"0,0", "5000,5000", "64,", ",64", "64,64,64", "6a", ""};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (ro_parse_dims(bad[i], &in, &out, &err) == 0) fail_msg("dims '%s' accepted", bad[i]);
    assert_int_equal(ro_check_heads(4, 64, &err), 0);
    assert_int_equal(ro_check_heads(3, 64, &err), -1);
    assert_non_null(strstr(err.msg, "heads 3 does not divide the output dim 64"));
    assert_int_equal(ro_check_heads(128, 128, &err), -1);
    assert_int_equal(ro_check_heads(0, 64, &err), -1);
}

/* ---- every command, end to end ---- */

static void require_explore(void)
{
    if (!rg_file_exists("build/explore")) {
        printf("skip: build/explore not built (run from the repository root)\n");
        skip();
    }
}

/* Runs `build/explore ARGS` with stdout discarded; its exit status and its stderr (caller frees). */
static int explore(const char *dir, const char *args, char **err_text)
{
    char *path = rg_xasprintf("%s/stderr", dir);
    char *cmd = rg_xasprintf("build/explore %s >/dev/null 2>%s", args, path);
    int st = system(cmd);
    *err_text = tu_read_file(path, NULL);
    free(cmd);
    free(path);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static int count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

/* The bad inputs the brief names, and which commands take each. */
typedef struct bad_input {
    const char *args;
    int config;   /* only the commands that take --config */
} bad_input;

static const bad_input BAD[] = {
    {"--heads 3", 0},
    {"--dims 0,0", 0},
    {"--dims 5000,5000", 0},
    {"--config tile=banana", 1},
    {"--config tile=16,tile=32", 1},
};

static void test_every_command_rejects_the_same_bad_input(void **state)
{
    (void)state;
    require_explore();
    char *dir = tu_tmpdir(), *db = rg_xasprintf("%s/store.db", dir);
    const char *synth = "synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4";
    /* each command with its good arguments; %s is the store they would write, where they have one */
    char *cmds[][2] = {
        {rg_xasprintf("run --model rgat --dataset %s", synth), (char *)"config"},
        {rg_xasprintf("gen --model rgat --dataset %s --out %s/gen", synth, dir), (char *)"config"},
        {rg_xasprintf("ir --model rgat"), NULL},
        {rg_xasprintf("--model rgat --dataset %s --backend sim --db %s --best-dir %s/best --commit t --no-cost-model",
                      synth, db, dir), NULL},
        {rg_xasprintf("pick --model rgat --dataset %s --db %s --cm %s/none.txt --backend sim --measure-top 2", synth,
                      db, dir), NULL},
        {rg_xasprintf("baselines --model rgat --dataset %s --db %s", synth, db), NULL},
    };
    int ncmds = (int)(sizeof cmds / sizeof cmds[0]);
    for (int c = 0; c < ncmds; c++)
        for (size_t b = 0; b < sizeof BAD / sizeof BAD[0]; b++) {
            if (BAD[b].config && !cmds[c][1]) continue;
            char *args = rg_xasprintf("%s %s", cmds[c][0], BAD[b].args), *err;
            int rc = explore(dir, args, &err);
            if (rc != 2 || count_lines(err) != 1)
                fail_msg("`explore %s`: exit %d, stderr:\n%s(expected exit 2 and one line)", args, rc, err);
            if (rg_file_exists(db)) fail_msg("`explore %s` wrote the store %s", args, db);
            free(err);
            free(args);
        }
    char *gen = rg_xasprintf("%s/gen", dir);
    assert_false(rg_file_exists(gen));
    for (int c = 0; c < ncmds; c++) free(cmds[c][0]);
    free(gen);
    free(db);
    tu_rm_tree(dir);
}

/* A plan file with the same bad problems: rejected before the sweep opens the store. */
static void test_plan_sweep_rejects_the_same_bad_input(void **state)
{
    (void)state;
    require_explore();
    char *dir = tu_tmpdir(), *db = rg_xasprintf("%s/store.db", dir);
    const char *lines[] = {"heads: 3\n", "dims: 0,0\n", "dims: 5000,5000\n"};
    for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
        char *text = rg_xasprintf("models: rgat\ndatasets: synth:nodes=3000,edges=20000,ntypes=3,etypes=4,ratio=0.4\n%s",
                                  lines[i]);
        char *plan = tu_write_file(dir, "bad.plan", text);
        char *args = rg_xasprintf("sweep --plan %s --backend sim --db %s --best-dir %s/best --no-cost-model", plan, db,
                                  dir), *err;
        int rc = explore(dir, args, &err);
        if (rc != 2 || count_lines(err) != 1)
            fail_msg("plan with '%s': exit %d, stderr:\n%s(expected exit 2 and one line)", lines[i], rc, err);
        assert_non_null(strstr(err, "bad.plan"));
        assert_false(rg_file_exists(db));
        free(err);
        free(args);
        free(plan);
        free(text);
    }
    free(db);
    tu_rm_tree(dir);
}

/* --gpus N: one sweep process per GPU into one database, every job exactly once. The jobs sweep a
 * space of 16 points, not the default one: which process takes which job and where its rows go do
 * not depend on the space, and the default space's half a million points made each of the three
 * processes spend seconds a job enumerating them and recording the invalid ones. */
static void test_plan_sweep_one_process_per_gpu(void **state)
{
    (void)state;
    require_explore();
    char *dir = tu_tmpdir();
    char *plan = tu_write_file(dir, "plan.txt", "models: rgat rgcn\ndatasets: synth:aifb\ntasks: infer train\n");
    char *space = tu_write_file(dir, "space.txt", "compact: off direct\ntile: 16 32\ntrav: edge node\nlanes: 16 32\n");
    char *db = rg_xasprintf("%s/one.db", dir);
    char *args = rg_xasprintf("sweep --plan %s --gpus 3 --backend sim --db %s --no-progress --no-cost-model "
                              "--budget 8 --space %s --best-dir %s/best", plan, db, space, dir);
    char *err_text;
    int rc = explore(dir, args, &err_text);
    if (rc != 0) fail_msg("exit %d: %s", rc, err_text);
    assert_non_null(strstr(err_text, "GPU 2 of 3: done"));
    assert_int_equal(tu_sql_int(db, "select count(distinct run_id) from measurements"), 3);
    /* 4 jobs, each measured by one process only */
    assert_int_equal(tu_sql_int(db, "select count(*) from (select v.model, v.task, count(distinct m.run_id) n "
                                    "from measurements m join variants v on v.id = m.variant_id group by 1, 2) "
                                    "where n = 1"), 4);
    free(err_text);
    free(args);
    args = rg_xasprintf("sweep --plan %s --gpus 2 --ranks 2 --backend sim --db %s", plan, db);
    assert_int_not_equal(explore(dir, args, &err_text), 0);
    assert_non_null(strstr(err_text, "use one or the other"));
    free(err_text);
    free(args);
    args = rg_xasprintf("sweep --plan %s --gpus all --backend sim --db %s", plan, db);
    assert_int_not_equal(explore(dir, args, &err_text), 0);
    assert_non_null(strstr(err_text, "give a number"));
    free(err_text);
    free(args);
    free(db);
    free(space);
    free(plan);
    tu_rm_tree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parser),
        cmocka_unit_test(test_shared_limits),
        cmocka_unit_test(test_every_command_rejects_the_same_bad_input),
        cmocka_unit_test(test_plan_sweep_rejects_the_same_bad_input),
        cmocka_unit_test(test_plan_sweep_one_process_per_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
