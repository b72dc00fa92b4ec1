/* Measurement in a child process: the backend lives in a forked worker so that a crash, a
 * sticky CUDA fault or a hang kills only the worker, which the driver records and restarts. */
#include "measure/worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- The protocol: a header then one struct. Both ends are the same program image (fork
 * without exec), so structs travel as raw bytes; the header catches framing mistakes. ---- */

#define XW_MAGIC 0x4b525758u   /* "XWRK" */
enum { MSG_READY = 1, MSG_MEASURE, MSG_RESULT, MSG_QUIT, MSG_REFERENCE };

typedef struct msg_header {
    uint32_t magic, type;
    uint64_t len;
} msg_header;

typedef struct ready_msg {
    int32_t ok;
    rg_err err;
    xw_info info;
} ready_msg;

/* The config travels as its canonical text: an override names its instance by an id that only the
 * process which interned the name knows (codegen/config.h), and the driver interns names after the
 * fork (a search's static list, a replayed store). 32 overrides and every key print in under 2 KB. */
#define XW_CONFIG_TEXT_MAX 4096
typedef struct measure_msg {
    int32_t index;
    char cfg[XW_CONFIG_TEXT_MAX];
    xb_options opt;
} measure_msg;

typedef struct result_msg {
    int32_t rc;
    rg_err err;
    xb_result r;
} result_msg;

#define TAIL_LINES 12
#define OUTPUT_LINE_MAX 1024   /* longer output lines are cut: evidence, not a log */

struct xw_worker {
    xw_config cfg;
    xb_problem problem;
    pid_t pid;          /* 0: no live worker (restart before the next variant) */
    int sock;           /* commands down, answers up */
    int out_fd;         /* the worker's stdout and stderr; -1 at end of file */
    int restarts;
    int referenced;     /* the live worker has built its reference (prepare_reference) */
    rg_str partial;     /* output line not yet ended by '\n' */
    char *tail[TAIL_LINES];
    int tail_next;
};

/* Writes everything; MSG_NOSIGNAL so a dead peer gives EPIPE instead of killing us. */
static int send_all(int fd, const void *buf, size_t n)
{
    const char *p = buf;
    while (n > 0) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads exactly n bytes; 0, or -1 at end of file or on an error. */
static int recv_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    while (n > 0) {
        ssize_t k = recv(fd, p, n, MSG_WAITALL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int send_msg(int fd, uint32_t type, const void *payload, size_t len)
{
    msg_header h = {XW_MAGIC, type, len};
    return send_all(fd, &h, sizeof h) || (len && send_all(fd, payload, len)) ? -1 : 0;
}

/* ---- The worker process ---- */

/* Prepares the problem and says so; 1 when prepared. */
static int child_answer_ready(int sock, xb_backend *b, const xb_problem *p)
{
    ready_msg m;
    memset(&m, 0, sizeof m);
    if (b->prepare(b, p, &m.info.stats, &m.err) == 0) {
        m.ok = 1;
        b->device(b, m.info.gpu_name, sizeof m.info.gpu_name, &m.info.sm, m.info.driver, m.info.cuda, m.info.cupti,
                  sizeof m.info.driver);
    }
    fflush(stdout);
    if (send_msg(sock, MSG_READY, &m, sizeof m)) _exit(3);
    return m.ok;
}

static void child_measure_loop(int sock, xb_backend *b, const xw_config *c)
{
    result_msg *res = rg_xmalloc(sizeof *res);
    for (;;) {
        msg_header h;
        if (recv_all(sock, &h, sizeof h) || h.magic != XW_MAGIC || h.type == MSG_QUIT) break;
        if (h.type == MSG_REFERENCE && h.len == 0) {
            ready_msg rm;
            memset(&rm, 0, sizeof rm);
            rm.ok = !b->prepare_reference || b->prepare_reference(b, &rm.err) == 0;
            fflush(stdout);
            if (send_msg(sock, MSG_READY, &rm, sizeof rm)) break;
            continue;
        }
        measure_msg m;
        if (h.type != MSG_MEASURE || h.len != sizeof m || recv_all(sock, &m, sizeof m)) break;
        if (c->before_measure) c->before_measure(b, m.index);
        memset(&res->err, 0, sizeof res->err);
        xb_result_init(&res->r);
        cg_config cfg;
        cfg_default(&cfg);
        rg_err perr;
        if (cfg_parse(&cfg, m.cfg, &perr)) RG_DIE("worker: the driver's config '%s' does not parse: %s", m.cfg, perr.msg);
        res->rc = b->measure(b, &cfg, &m.opt, &res->r, &res->err);
        fflush(stdout);
        if (send_msg(sock, MSG_RESULT, res, sizeof *res)) break;
    }
    free(res);
}

static _Noreturn void child_main(const xw_config *c, const xb_problem *p, int sock, int out_fd, pid_t parent)
{
    /* Die with the driver (even when it is SIGKILLed), and leave Ctrl-C and SIGTERM to it:
     * it finishes the current variant, then tells us to quit. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(4);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    dup2(out_fd, STDOUT_FILENO);
    dup2(out_fd, STDERR_FILENO);
    close(out_fd);
    setvbuf(stdout, NULL, _IOLBF, BUFSIZ);
    rg_err err;
    memset(&err, 0, sizeof err);
    xb_backend *b = c->make_backend(c->backend_spec, c->backend_ctx, &err);
    if (!b) {
        ready_msg m;
        memset(&m, 0, sizeof m);
        m.err = err;
        send_msg(sock, MSG_READY, &m, sizeof m);
        _exit(0);
    }
    if (child_answer_ready(sock, b, p)) child_measure_loop(sock, b, c);
    b->close(b);
    fflush(stdout);
    _exit(0);
}

/* ---- The worker's output: forwarded line by line, the last lines kept as evidence ---- */

static void keep_line(xw_worker *w, const char *line)
{
    free(w->tail[w->tail_next]);
    w->tail[w->tail_next] = rg_xstrdup(line);
    w->tail_next = (w->tail_next + 1) % TAIL_LINES;
    if (w->cfg.on_output) w->cfg.on_output(w->cfg.ctx, line);
}

static void take_output(xw_worker *w, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (buf[i] == '\n') {
            keep_line(w, w->partial.s ? w->partial.s : "");
            w->partial.len = 0;
            if (w->partial.s) w->partial.s[0] = 0;
        } else if (w->partial.len < OUTPUT_LINE_MAX) {
            rg_str_putc(&w->partial, buf[i]);
        }
    }
}

/* Reads what the worker wrote so far (the pipe is non-blocking). */
static void drain_output(xw_worker *w)
{
    char buf[4096];
    while (w->out_fd >= 0) {
        ssize_t k = read(w->out_fd, buf, sizeof buf);
        if (k > 0) {
            take_output(w, buf, (size_t)k);
            continue;
        }
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) {   /* the worker is gone: its unfinished last line counts too */
            if (w->partial.len) take_output(w, "\n", 1);
            close(w->out_fd);
            w->out_fd = -1;
        }
        break;
    }
}

static void clear_tail(xw_worker *w)
{
    for (int i = 0; i < TAIL_LINES; i++) {
        free(w->tail[i]);
        w->tail[i] = NULL;
    }
    w->tail_next = 0;
    w->partial.len = 0;
    if (w->partial.s) w->partial.s[0] = 0;
}

/* "what; last output lines of the worker: ..." cut from the front to fit the evidence field. */
static void write_evidence(const xw_worker *w, const char *what, char *out, size_t cap)
{
    rg_str s = {0};
    rg_str_puts(&s, what);
    int any = 0;
    for (int i = 0; i < TAIL_LINES; i++) {
        const char *line = w->tail[(w->tail_next + i) % TAIL_LINES];
        if (!line) continue;
        rg_str_puts(&s, any ? "\n" : "\nlast output lines of the worker:\n");
        rg_str_puts(&s, line);
        any = 1;
    }
    if (!any) rg_str_puts(&s, "\n(the worker wrote nothing)");
    if (s.len + 1 > cap) {
        /* keep the head (what happened) and the newest lines */
        size_t head = strlen(what) < cap / 2 ? strlen(what) : cap / 2;
        size_t room = cap - 1 - head - 5;   /* 5: "\n...\n" */
        snprintf(out, cap, "%.*s\n...\n%s", (int)head, s.s, s.s + s.len - room);
    } else {
        snprintf(out, cap, "%s", s.s);
    }
    rg_str_free(&s);
}

/* ---- Driving the worker ---- */

enum { WAIT_OK, WAIT_DIED, WAIT_TIMEOUT, WAIT_ABORTED, WAIT_PROTOCOL };

static int read_msg(xw_worker *w, uint32_t type, void *payload, size_t len)
{
    msg_header h;
    if (recv_all(w->sock, &h, sizeof h)) return WAIT_DIED;
    if (h.magic != XW_MAGIC || h.type != type || h.len != len) return WAIT_PROTOCOL;
    return recv_all(w->sock, payload, len) ? WAIT_DIED : WAIT_OK;
}

/* Waits for the answer while forwarding output; polls in short slices so that a signal
 * that arrives just before poll() is still seen within a fraction of a second. */
static int wait_msg(xw_worker *w, uint32_t type, void *payload, size_t len, double deadline)
{
    for (;;) {
        if (w->cfg.abort_now && *w->cfg.abort_now) return WAIT_ABORTED;
        int ms = 200;
        if (deadline > 0) {
            double left = deadline - rg_now();
            if (left <= 0) return WAIT_TIMEOUT;
            if (left * 1000 < ms) ms = (int)(left * 1000) + 1;
        }
        struct pollfd pf[2] = {{w->sock, POLLIN, 0}, {w->out_fd, POLLIN, 0}};
        int n = poll(pf, w->out_fd >= 0 ? 2 : 1, ms);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return WAIT_PROTOCOL;
        if (w->out_fd >= 0 && pf[1].revents) drain_output(w);
        if (pf[0].revents) {
            drain_output(w);   /* what it printed before answering belongs to this variant */
            return read_msg(w, type, payload, len);
        }
    }
}

static void describe_exit(int status, char *out, size_t cap)
{
    if (WIFSIGNALED(status))
        snprintf(out, cap, "killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
    else if (WIFEXITED(status))
        snprintf(out, cap, "exited with status %d", WEXITSTATUS(status));
    else
        snprintf(out, cap, "ended with wait status %d", status);
}

/* Collects the worker (killing it first if asked, or if it lingers) and its last output. */
static void reap(xw_worker *w, int kill_first, char *how, size_t cap)
{
    int status = 0;
    if (kill_first) kill(w->pid, SIGKILL);
    double give_up = rg_now() + 2.0;
    for (;;) {
        pid_t r = waitpid(w->pid, &status, kill_first ? 0 : WNOHANG);
        if (r == w->pid || (r < 0 && errno != EINTR)) break;
        if (r == 0 && rg_now() > give_up) kill_first = 1, kill(w->pid, SIGKILL);
        else if (r == 0) usleep(2000);
    }
    if (w->out_fd >= 0) {
        /* every writer is gone now: read to the end */
        fcntl(w->out_fd, F_SETFL, fcntl(w->out_fd, F_GETFL) & ~O_NONBLOCK);
        drain_output(w);
    }
    if (how) describe_exit(status, how, cap);
    close(w->sock);
    w->sock = -1;
    w->pid = 0;
}

static int await_ready(xw_worker *w, xw_info *info, const char *doing, rg_err *err);

static int spawn(xw_worker *w, xw_info *info, rg_err *err)
{
    int sv[2], op[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
        return rg_errf(err, "cannot start a worker: socketpair: %s", strerror(errno));
    if (pipe2(op, O_CLOEXEC)) {
        close(sv[0]);
        close(sv[1]);
        return rg_errf(err, "cannot start a worker: pipe: %s", strerror(errno));
    }
    fflush(stdout);
    fflush(stderr);
    pid_t parent = getpid(), pid = fork();
    if (pid < 0) {
        close(sv[0]), close(sv[1]), close(op[0]), close(op[1]);
        return rg_errf(err, "cannot start a worker: fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(sv[0]);
        close(op[0]);
        child_main(&w->cfg, &w->problem, sv[1], op[1], parent);
    }
    close(sv[1]);
    close(op[1]);
    w->pid = pid;
    w->referenced = 0;
    w->sock = sv[0];
    w->out_fd = op[0];
    fcntl(w->out_fd, F_SETFL, fcntl(w->out_fd, F_GETFL) | O_NONBLOCK);
    clear_tail(w);

    return await_ready(w, info, "preparing the problem", err);
}

/* Waits (within prepare_timeout_s) for the worker's answer to preparing; on failure the
 * worker is collected and err says why, with its last output. */
static int await_ready(xw_worker *w, xw_info *info, const char *doing, rg_err *err)
{
    ready_msg *m = rg_xmalloc(sizeof *m);
    double deadline = w->cfg.prepare_timeout_s > 0 ? rg_now() + w->cfg.prepare_timeout_s : 0;
    int rc = wait_msg(w, MSG_READY, m, sizeof *m, deadline);
    char how[160] = "", ev[2048];
    if (rc == WAIT_OK && m->ok) {
        if (info) *info = m->info;
        free(m);
        return 0;
    }
    reap(w, rc != WAIT_OK && rc != WAIT_DIED, how, sizeof how);
    if (rc == WAIT_OK) {
        if (err) *err = m->err;
    } else {
        const char *what = rc == WAIT_DIED ? "the worker died while %s"
                           : rc == WAIT_TIMEOUT ? "%s took too long; the worker was killed"
                           : rc == WAIT_ABORTED ? "interrupted while %s"
                                                : "worker protocol error while %s";
        char *line = rg_xasprintf(what, doing);
        char *full = rg_xasprintf("%s (%s)", line, how);
        write_evidence(w, full, ev, sizeof ev);
        free(line);
        free(full);
        /* one line for the user: the first output line is usually the cause */
        for (char *nl = strchr(ev, '\n'); nl; nl = strchr(nl, '\n')) *nl = ' ';
        rg_errf(err, "%s", ev);
    }
    free(m);
    return -1;
}

xw_worker *xw_start(const xw_config *c, const xb_problem *p, xw_info *info, rg_err *err)
{
    RG_ASSERT(c->make_backend);
    xw_worker *w = rg_xcalloc(1, sizeof *w);
    w->cfg = *c;
    w->problem = *p;
    w->sock = w->out_fd = -1;
    if (spawn(w, info, err)) {
        xw_stop(w);
        return NULL;
    }
    return w;
}

/* A worker whose last variant killed it is replaced before the next one; a worker that
 * has not built its reference yet builds it now (without the per-variant timeout). */
static int ensure_worker(xw_worker *w, rg_err *err)
{
    if (w->pid <= 0) {
        xw_info info;
        if (spawn(w, &info, err)) {
            rg_err_prefix(err, "restarting the worker");
            return -1;
        }
        w->restarts++;
    }
    if (w->referenced) return 0;
    if (send_msg(w->sock, MSG_REFERENCE, NULL, 0)) {
        reap(w, 1, NULL, 0);
        return rg_errf(err, "the worker died before building the reference");
    }
    if (await_ready(w, NULL, "building the reference", err)) return -1;
    w->referenced = 1;
    return 0;
}

static void fail_result(xw_worker *w, xb_result *r, rs_status st, const char *what)
{
    xb_result_init(r);
    r->status = st;
    write_evidence(w, what, r->evidence, sizeof r->evidence);
}

int xw_measure(xw_worker *w, int index, const cg_config *cfg, const xb_options *opt, xb_result *r, rg_err *err)
{
    if (w->cfg.abort_now && *w->cfg.abort_now) return XW_ABORTED;
    if (ensure_worker(w, err)) return w->cfg.abort_now && *w->cfg.abort_now ? XW_ABORTED : -1;
    measure_msg m;
    memset(&m, 0, sizeof m);
    m.index = index;
    char *text = cfg_to_string(cfg);
    RG_ASSERT(strlen(text) < sizeof m.cfg);
    memcpy(m.cfg, text, strlen(text) + 1);
    free(text);
    m.opt = *opt;
    if (send_msg(w->sock, MSG_MEASURE, &m, sizeof m)) {
        /* it died after its previous answer: that variant's outcome stands; run this one anew */
        reap(w, 1, NULL, 0);
        if (ensure_worker(w, err)) return -1;
        if (send_msg(w->sock, MSG_MEASURE, &m, sizeof m)) return rg_errf(err, "cannot talk to a fresh worker");
    }
    clear_tail(w);
    double start = rg_now(), deadline = w->cfg.timeout_s > 0 ? start + w->cfg.timeout_s : 0;
    result_msg *res = rg_xmalloc(sizeof *res);
    int rc = wait_msg(w, MSG_RESULT, res, sizeof *res, deadline), out = XW_DONE;
    char how[160], what[400];
    switch (rc) {
    case WAIT_OK:
        if (res->rc < 0) {
            if (err) *err = res->err;
            out = -1;
        } else {
            *r = res->r;
            /* a device fault reported by the backend leaves the worker's CUDA context unusable
             * (sticky errors): the next variant gets a fresh worker */
            if (r->status == RS_RUNTIME_FAULT) reap(w, 1, NULL, 0);
        }
        break;
    case WAIT_DIED:
        reap(w, 0, how, sizeof how);
        snprintf(what, sizeof what, "runtime fault: the worker died while measuring (%s) after %.2f s", how,
                 rg_now() - start);
        fail_result(w, r, RS_RUNTIME_FAULT, what);
        break;
    case WAIT_TIMEOUT:
        reap(w, 1, how, sizeof how);
        snprintf(what, sizeof what, "timeout: no result after %g s (--timeout); the worker was killed", w->cfg.timeout_s);
        fail_result(w, r, RS_TIMEOUT, what);
        break;
    case WAIT_ABORTED:
        reap(w, 1, NULL, 0);
        out = XW_ABORTED;
        break;
    default:
        reap(w, 1, NULL, 0);
        out = rg_errf(err, "worker protocol error (a message of the wrong type or size)");
    }
    free(res);
    return out;
}

int xw_restarts(const xw_worker *w) { return w->restarts; }

void xw_stop(xw_worker *w)
{
    if (!w) return;
    if (w->pid > 0) {
        /* give it a moment to close the backend cleanly, then kill it */
        int collected = 0, status;
        if (send_msg(w->sock, MSG_QUIT, NULL, 0) == 0) {
            for (double until = rg_now() + 5.0; rg_now() < until;) {
                pid_t r = waitpid(w->pid, &status, WNOHANG);
                if (r == w->pid || (r < 0 && errno != EINTR)) {
                    collected = 1;
                    break;
                }
                drain_output(w);
                usleep(2000);
            }
        }
        if (collected) w->pid = 0;
        else reap(w, 1, NULL, 0);
    }
    if (w->sock >= 0) close(w->sock);
    if (w->out_fd >= 0) {
        drain_output(w);
        if (w->out_fd >= 0) close(w->out_fd);
    }
    clear_tail(w);
    rg_str_free(&w->partial);
    free(w);
}
