/* SPDX-License-Identifier: MIT */
/*
 * The files a command reads and writes (outfile.h): inputs compared with outputs, outputs
 * written beside their targets and renamed into place when complete.
 *
 * Why a temporary file and a rename: opening a target with "w" truncates it at once, so a
 * run that then fails, is interrupted or is killed has already destroyed the previous
 * result at that path (and an output that names an input, the input). rename(2) within one
 * directory replaces the target atomically: a reader sees the old file or the new one,
 * never a part. Hence the temporary file lives in the target's directory (same file
 * system), and a target that is a symbolic link is resolved first so that the file the link
 * names is replaced and the link kept.
 *
 * Why (st_dev, st_ino): two paths can name one file through ".", "..", a symbolic link or a
 * hard link; only the file's identity tells. A character device (/dev/null, /dev/stdout on
 * a terminal) is not a file that can be destroyed and may be named twice. Two outputs not
 * created yet cannot be told apart by inode: their paths are compared with the directory
 * resolved (realpath of the directory, then the name).
 *
 * Temporary files that were not put in place are listed in `pending` (fixed arrays: a
 * signal handler reads them, so no allocation and no lock); atexit and the fatal-signal
 * handlers remove them with unlink(2), which is async-signal-safe.
 */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "outfile.h"

/* ---- temporary files not yet in place ---------------------------------------------------- */

#define MAX_PENDING 16
#define NAME_MAX_   4200

/* A slot is in use while used[k] is 1 (written by the main thread only: set after the name,
 * cleared before the name is reused; a handler reads both). */
static char pending[MAX_PENDING][NAME_MAX_];
static volatile sig_atomic_t used[MAX_PENDING];
static bool hooks_installed;

void cli_out_unlink_pending(void)
{
	for (int k = 0; k < MAX_PENDING; k++)
		if (used[k]) {
			unlink(pending[k]);
			used[k] = 0;
		}
}

static void at_exit(void)
{
	cli_out_unlink_pending();
}

/* A fatal signal in a command that does not handle it: its temporary files go, then the
 * signal's default action (the exit status tells the caller which signal it was). */
static void on_fatal(int sig)
{
	cli_out_unlink_pending();
	struct sigaction dfl = {.sa_handler = SIG_DFL};
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	raise(sig); /* blocked in this handler: delivered when it returns */
}

/* atexit, and a handler for SIGINT, SIGTERM and SIGHUP where none is installed (rusk run and
 * sim have their own, which calls cli_out_unlink_pending before it ends the process). */
static void install_hooks(void)
{
	if (hooks_installed)
		return;
	hooks_installed = true;
	atexit(at_exit);
	const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
	for (size_t k = 0; k < sizeof sigs / sizeof *sigs; k++) {
		struct sigaction old;
		if (sigaction(sigs[k], NULL, &old) != 0 || old.sa_handler != SIG_DFL)
			continue;
		struct sigaction sa = {.sa_handler = on_fatal};
		sigemptyset(&sa.sa_mask);
		sigaction(sigs[k], &sa, NULL);
	}
}

static int pending_add(const char *name)
{
	for (int k = 0; k < MAX_PENDING; k++)
		if (!used[k]) {
			snprintf(pending[k], sizeof pending[k], "%s", name);
			used[k] = 1;
			return k;
		}
	return -1;
}

/* ---- identities ---------------------------------------------------------------------------- */

/* What a path names: an existing file's identity, or, for one not created yet, its path with
 * the directory resolved. */
typedef struct fid {
	bool exists, chr;
	dev_t dev;
	ino_t ino;
	char resolved[PATH_MAX + 256];
} fid;

/* `path` with its directory resolved (symbolic links, `.`, `..`) into buf; the path itself
 * when its directory cannot be resolved. */
static void resolve_dir(const char *path, char *buf, size_t len)
{
	char dir[PATH_MAX], real[PATH_MAX];
	const char *slash = strrchr(path, '/');
	const char *base = slash != NULL ? slash + 1 : path;
	if (slash == path)
		snprintf(dir, sizeof dir, "/");
	else if (slash != NULL)
		snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
	else
		snprintf(dir, sizeof dir, ".");
	int n = realpath(dir, real) != NULL ? snprintf(buf, len, "%s/%s", real, base) : -1;
	if (n < 0 || (size_t)n >= len)
		snprintf(buf, len, "%s", path);
}

/* Where a symbolic link that names no file yet (dangling) would create it: the link's
 * target, relative to the link's directory, followed up to 8 times, into buf (len bytes).
 * Any other path is copied. */
static void follow_dangling(const char *path, char *buf, size_t len)
{
	char cur[PATH_MAX], to[PATH_MAX];
	snprintf(cur, sizeof cur, "%s", path);
	struct stat lst;
	for (int k = 0; k < 8 && lstat(cur, &lst) == 0 && S_ISLNK(lst.st_mode); k++) {
		ssize_t n = readlink(cur, to, sizeof to - 1);
		if (n <= 0)
			break;
		to[n] = '\0';
		const char *slash = strrchr(cur, '/');
		if (to[0] == '/' || slash == NULL) {
			snprintf(cur, sizeof cur, "%s", to);
		} else {
			char dir[PATH_MAX];
			snprintf(dir, sizeof dir, "%.*s", (int)(slash - cur + 1), cur);
			int n = snprintf(cur, sizeof cur, "%s%s", dir, to);
			if (n < 0 || (size_t)n >= sizeof cur)
				break; /* too long to follow: compared as it is */
		}
	}
	snprintf(buf, len, "%s", cur);
}

static void file_id(const char *path, fid *id)
{
	struct stat st;
	memset(id, 0, sizeof *id);
	bool std = strcmp(path, "-") == 0;
	id->exists = std ? fstat(0, &st) == 0 : stat(path, &st) == 0;
	if (id->exists) {
		id->dev = st.st_dev;
		id->ino = st.st_ino;
		id->chr = S_ISCHR(st.st_mode);
	} else {
		char to[PATH_MAX];
		follow_dangling(path, to, sizeof to);
		resolve_dir(to, id->resolved, sizeof id->resolved);
	}
}

/* Whether writing one would destroy the other. */
static bool same_file(const fid *a, const fid *b)
{
	if (a->exists && b->exists)
		return a->dev == b->dev && a->ino == b->ino && !a->chr;
	if (a->exists != b->exists)
		return false;
	return strcmp(a->resolved, b->resolved) == 0;
}

int cli_files_check(const cli_in *in, size_t n_in, const cli_out *out, size_t n_out)
{
	fid o[CLI_MAX_OUTS], x;
	for (size_t i = 0; i < n_out && i < CLI_MAX_OUTS; i++) {
		if (out[i].path == NULL)
			continue;
		file_id(out[i].path, &o[i]);
		for (size_t j = 0; j < i; j++)
			if (out[j].path != NULL && same_file(&o[j], &o[i])) {
				fprintf(stderr, "rusk: %s %s and %s %s name the same file\n",
				        out[j].flag, out[j].path, out[i].flag, out[i].path);
				return -1;
			}
	}
	for (size_t k = 0; k < n_in; k++) {
		if (in[k].path == NULL)
			continue;
		file_id(in[k].path, &x);
		for (size_t i = 0; i < n_out && i < CLI_MAX_OUTS; i++)
			if (out[i].path != NULL && same_file(&o[i], &x)) {
				fprintf(stderr, "rusk: %s %s and %s %s name the same file\n",
				        out[i].flag, out[i].path, in[k].flag, in[k].path);
				return -1;
			}
	}
	return 0;
}

/* ---- opening, closing ---------------------------------------------------------------------- */

const char *cli_out_name(const cli_out *o)
{
	return o->slot > 0 ? pending[o->slot - 1] : o->target;
}

static int open_failed(const cli_out *o, int e)
{
	fprintf(stderr, "rusk: %s: %s: %s\n", o->flag, o->path, strerror(e));
	return -1;
}

/* Opens o (see the top of the file). 0, or -1 after the message. */
static int open_one(cli_out *o)
{
	struct stat st, lst;
	o->f = NULL;
	o->slot = 0;
	snprintf(o->target, sizeof o->target, "%s", o->path);
	bool exists = stat(o->path, &st) == 0;
	if (exists && S_ISDIR(st.st_mode))
		return open_failed(o, EISDIR);
	if (exists && !S_ISREG(st.st_mode)) { /* a device or pipe: written in place */
		if (!o->external && (o->f = fopen(o->path, "w")) == NULL)
			return open_failed(o, errno);
		return 0;
	}
	char real[PATH_MAX];
	if (exists && lstat(o->path, &lst) == 0 && S_ISLNK(lst.st_mode) &&
	    realpath(o->path, real) != NULL)
		snprintf(o->target, sizeof o->target, "%s", real);
	else if (!exists)
		follow_dangling(o->path, o->target, sizeof o->target);
	if (exists && access(o->target, W_OK) != 0) /* as opening it for writing would */
		return open_failed(o, errno);
	char tmp[NAME_MAX_];
	const char *slash = strrchr(o->target, '/');
	int dl = slash != NULL ? (int)(slash - o->target + 1) : 0;
	int n = snprintf(tmp, sizeof tmp, "%.*s.%s.rusk-XXXXXX", dl, o->target, o->target + dl);
	if (n < 0 || (size_t)n >= sizeof tmp)
		return open_failed(o, ENAMETOOLONG);
	int fd = mkstemp(tmp);
	if (fd < 0)
		return open_failed(o, errno);
	mode_t mask = umask(0);
	umask(mask);
	if (fchmod(fd, exists ? st.st_mode & 07777 : 0666 & ~mask) != 0) {
		int e = errno;
		close(fd);
		unlink(tmp);
		return open_failed(o, e);
	}
	if ((o->slot = pending_add(tmp) + 1) == 0) {
		close(fd);
		unlink(tmp);
		return open_failed(o, EMFILE);
	}
	if (o->external) {
		close(fd);
	} else if ((o->f = fdopen(fd, "w")) == NULL) {
		int e = errno;
		close(fd);
		cli_out_discard(o);
		return open_failed(o, e);
	}
	return 0;
}

int cli_files_open(const cli_in *in, size_t n_in, cli_out *out, size_t n_out)
{
	for (size_t i = 0; i < n_out; i++) {
		out[i].f = NULL;
		out[i].slot = 0;
	}
	if (n_out > CLI_MAX_OUTS) {
		fprintf(stderr, "rusk: more than %d output files\n", CLI_MAX_OUTS);
		return RUSK_EXIT_USAGE;
	}
	if (cli_files_check(in, n_in, out, n_out) != 0)
		return RUSK_EXIT_USAGE;
	install_hooks();
	for (size_t i = 0; i < n_out; i++)
		if (out[i].path != NULL && open_one(&out[i]) != 0) {
			cli_outs_discard(out, n_out);
			return RUSK_EXIT_USAGE;
		}
	return 0;
}

void cli_out_discard(cli_out *o)
{
	if (o->path == NULL)
		return;
	if (o->f != NULL)
		fclose(o->f);
	o->f = NULL;
	if (o->slot > 0) {
		unlink(pending[o->slot - 1]);
		used[o->slot - 1] = 0;
		o->slot = 0;
	}
}

int cli_out_close(cli_out *o)
{
	if (o->path == NULL)
		return 0;
	int e = 0; /* errno of the first failure; -1: a write failed earlier, reason unknown */
	if (o->f != NULL) {
		if (fflush(o->f) != 0)
			e = errno;
		else if (ferror(o->f))
			e = -1;
		if (fclose(o->f) != 0 && e == 0)
			e = errno;
		o->f = NULL;
	}
	if (e == 0 && o->slot > 0 && rename(pending[o->slot - 1], o->target) != 0)
		e = errno;
	if (e != 0) {
		fprintf(stderr, "rusk: %s: %s: write failed%s%s\n", o->flag, o->path,
		        e > 0 ? ": " : "", e > 0 ? strerror(e) : "");
		cli_out_discard(o);
		return -1;
	}
	if (o->slot > 0)
		used[o->slot - 1] = 0; /* renamed: nothing left to remove */
	o->slot = 0;
	return 0;
}

int cli_outs_close(cli_out *o, size_t n)
{
	int rc = 0;
	for (size_t i = 0; i < n; i++)
		if (cli_out_close(&o[i]) != 0)
			rc = -1;
	return rc;
}

void cli_outs_discard(cli_out *o, size_t n)
{
	for (size_t i = 0; i < n; i++)
		cli_out_discard(&o[i]);
}

static int stdout_errno; /* of an earlier failed flush (cli_stdout_flush) */

int cli_stdout_flush(void)
{
	if (fflush(stdout) == 0)
		return 0;
	if (stdout_errno == 0)
		stdout_errno = errno;
	return -1;
}

int cli_stdout_close(void)
{
	int e = 0;
	if (fflush(stdout) != 0)
		e = errno;
	else if (ferror(stdout))
		e = stdout_errno != 0 ? stdout_errno : -1;
	if (fclose(stdout) != 0 && e == 0)
		e = errno;
	if (e == 0)
		return 0;
	fprintf(stderr, "rusk: stdout: write failed%s%s\n", e > 0 ? ": " : "",
	        e > 0 ? strerror(e) : "");
	return -1;
}
